#!/usr/bin/env bash
# IntentQueue on one machine, from nothing: installs what is missing, starts a
# local RabbitMQ on loopback when none answers, builds, starts a worker that
# hosts the status recorder, submits the Hairdressers story and prints how
# each intent ended.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install.sh
deploy/broker.sh ensure 5672

echo "quickstart: building (release)…"
# The Swift runtime linked in: a tool starts in about half the time (no
# Foundation to load from shared libraries), which is most of a lookup's cost.
swift build -c release --static-swift-stdlib 2>&1 | grep -E "error|warning: |Compiling|Build complete" | grep -v "mktemp" | tail -3
BIN="$(swift build -c release --static-swift-stdlib --show-bin-path)"

RUN_ID="$(date +%Y%m%d-%H%M%S)-$$"
RUN_DIR="${INTENTQUEUE_QUICKSTART_DIR:-$PWD/.build/quickstart}/$RUN_ID"
mkdir -p "$RUN_DIR"
export INTENT_STATUS_DB="$RUN_DIR/status.sqlite"
export HAIRDRESSERS_DB="$RUN_DIR/hairdressers.sqlite"

"$BIN/intent-worker" --with-recorder 2>"$RUN_DIR/worker.log" &
WORKER=$!
stop_worker() {
    kill -TERM "$WORKER" 2>/dev/null || true
    wait "$WORKER" 2>/dev/null || true
}
trap stop_worker EXIT

for _ in $(seq 1 150); do
    [[ $(grep -c " connected " "$RUN_DIR/worker.log" || true) -ge 2 ]] && break
    kill -0 "$WORKER" 2>/dev/null || { echo "quickstart: the worker exited; see $RUN_DIR/worker.log" >&2; cat "$RUN_DIR/worker.log" >&2; exit 1; }
    sleep 0.2
done

messages_for() {
    sqlite3 "$HAIRDRESSERS_DB" "SELECT count(*) FROM message WHERE intent_id = '$1'"
}

story() {
    local number="$1" title="$2"
    shift 2
    local id="story-$number-$RUN_ID" code=0
    echo
    echo "── $number. $title"
    echo "   \$ intent-submit $*"
    "$BIN/intent-submit" "$@" --id "$id" --wait --timeout 20 >/dev/null || code=$?
    "$BIN/intent-status" "$id" | sed 's/^/   /' || true
    if [[ "$1" == SendMessage ]]; then
        echo "   exit code $code; Message rows stored for this intent: $(messages_for "$id")"
    else
        echo "   exit code $code"
    fi
}

echo
echo "IntentQueue quickstart — broker ${INTENT_BROKER_URL:-amqp://guest:***@127.0.0.1:5672/%2f}"
echo "status store $INTENT_STATUS_DB"
story 1 "A message to two hairdressers" SendMessage recipients=Alice,Bob "content=Running late, sorry"
story 2 "A message to \"Jeff\": two hairdressers are called Jeff" SendMessage recipients=Jeff "content=Can you do 3pm?"
story 3 "A message to the group \"co\"" SendMessage groupName=co "content=Team lunch on Friday"
story 4 "Two tomato soups" OrderSoup soup=tomato quantity=2
story 5 "A sold-out soup" OrderSoup soup=Minestrone quantity=1
echo
echo "Story 2 waits for an answer; give it later, under the same id:"
echo "   export INTENT_STATUS_DB=$INTENT_STATUS_DB HAIRDRESSERS_DB=$HAIRDRESSERS_DB"
echo "   $BIN/intent-worker --with-recorder &"
echo "   $BIN/intent-submit --answer story-2-$RUN_ID \"recipients=Jeff Baker\" --wait"
echo "Worker log: $RUN_DIR/worker.log"
