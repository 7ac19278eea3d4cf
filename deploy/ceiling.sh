#!/usr/bin/env bash
# Builds the independent C implementation of IntentQueue's message pattern
# (deploy/ceiling/ceiling.c: rabbitmq-c and SQLite, none of IntentQueue's code)
# and runs intent-bench with it, so that the Swift ceiling phase is checked
# against it in the same run, on the same broker.
#
#   deploy/ceiling.sh [--bin .build/release] [intent-bench options…]
#   deploy/ceiling.sh --c-effects …   the C pattern at the latency phase's rate once more, with once-only effects
#
# Needs a C compiler and the librabbitmq and libsqlite3 headers (deploy/install.sh).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/../.build/release"
if [[ "${1:-}" == --bin ]]; then BIN="$2"; shift 2; fi
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
[[ -x "$BIN/intent-bench" ]] || { echo "ceiling.sh: no intent-bench in $BIN (swift build -c release)" >&2; exit 69; }
command -v cc >/dev/null || { echo "ceiling.sh: no C compiler (cc)" >&2; exit 69; }
OUT="$HERE/../.build/ceiling"
mkdir -p "$OUT"
cc -O2 -Wall -Wextra -Werror -o "$OUT/ceiling" "$HERE/ceiling/ceiling.c" -lrabbitmq -lsqlite3 -lpthread
"$HERE/broker.sh" ensure 5672 >/dev/null
exec "$BIN/intent-bench" --c-ceiling "$OUT/ceiling" "$@"
