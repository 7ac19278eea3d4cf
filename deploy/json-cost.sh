#!/usr/bin/env bash
# Instructions per envelope for each way the worker could read its intents,
# counted by valgrind's callgrind (repeatable, unlike timings on this VM):
#   typed       what the worker does: IntentKit's parser, the envelope, the @Parameter intent (one decode)
#   hand        the parser, the envelope, a plain Codable struct through JSONValueDecoder
#   foundation  Foundation's JSONDecoder on the whole body
#   parse       IntentKit's parser alone
#   envelope    the envelope alone, read from the body (IntentEnvelope.decode)
#   ledger      a submission as the recorder reads it: the envelope, and its parameters written for the store
#   event       a SendMessage's `success` status event, parsed and read as the recorder reads it
# The harness is compiled with IntentKit's sources (-O) into one module; each
# mode runs 2 and 4 rounds of 1,000 real SendMessage envelopes, and the
# difference over 2,000 envelopes leaves out start-up and set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "json-cost.sh: needs valgrind (apt-get install valgrind)" >&2; exit 69; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swiftc -O -module-name IntentKit -package-name IntentQueue Sources/IntentKit/*.swift deploy/json-cost/main.swift -o "$work/json-cost"
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/json-cost" "$1" "$2" 2>&1 | awk '/Collected/ {print $4}'; }
for mode in typed hand foundation parse envelope ledger event; do
    two=$(count "$mode" 2)
    four=$(count "$mode" 4)
    what=envelope
    [[ $mode == event ]] && what=event
    printf '%-11s %7d instructions per %s\n' "$mode" $(( (four - two) / 2000 )) "$what"
done
