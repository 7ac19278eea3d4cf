#!/usr/bin/env bash
# IntentQueue on one machine, from nothing: installs what is missing, starts a
# local RabbitMQ on loopback when none answers, builds, starts a worker that
# hosts the status recorder and the HTTP gateway, submits the Hairdressers
# story and prints how each intent ended, then the gateway's URL and a token.
# The worker and the gateway keep running afterwards (it prints how to stop them).
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install.sh
deploy/broker.sh ensure 5672

echo "quickstart: building (release)…"
# The Swift runtime and the C++ runtime under it linked in: a tool starts in
# about a third of the time (no Foundation or libstdc++ to load from shared
# libraries), which is most of a lookup's cost.
deploy/build-release.sh 2>&1 | grep -E "error|warning: |Compiling|Build complete" | grep -v "mktemp" | tail -3
BIN="$(deploy/build-release.sh --show-bin-path)"

RUN_ID="$(date +%Y%m%d-%H%M%S)-$$"
RUNS="${INTENTQUEUE_QUICKSTART_DIR:-$PWD/.build/quickstart}"
RUN_DIR="$RUNS/$RUN_ID"
mkdir -p "$RUN_DIR"
export INTENT_STATUS_DB="$RUN_DIR/status.sqlite"
export HAIRDRESSERS_DB="$RUN_DIR/hairdressers.sqlite"

# The worker and gateway an earlier run left running: a second recorder on the same queue would split the
# events between two stores, and the old gateway would hold the port. Stopped by the pids that run noted,
# each only if it is still that run's tool.
if [[ -f "$RUNS/running" ]]; then
    for pid in $(cat "$RUNS/running"); do
        [[ "$pid" =~ ^[0-9]+$ ]] || continue
        # Only this checkout's own worker or gateway (a pid reused since, or a system's intent-worker, is left alone).
        exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
        exe="${exe% (deleted)}" # relinked by this run's build since it started
        if [[ "$exe" == "$BIN/intent-worker" || "$exe" == "$BIN/intent-gateway" ]]; then
            echo "quickstart: stopping pid $pid, left running by an earlier quickstart"
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        fi
    done
    rm -f "$RUNS/running"
fi

# Their output goes to files: left running, they must not hold the caller's terminal or pipe open.
"$BIN/intent-worker" --with-recorder --scheduler </dev/null >"$RUN_DIR/worker.out" 2>"$RUN_DIR/worker.log" &
WORKER=$!
GATEWAY=""
stop_services() {
    for pid in $GATEWAY $WORKER; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in $GATEWAY $WORKER; do wait "$pid" 2>/dev/null || true; done
}
# Stopped when the quickstart fails; left running when it succeeds.
trap stop_services EXIT

connected=false
for _ in $(seq 1 150); do
    [[ $(grep -c " connected " "$RUN_DIR/worker.log" || true) -ge 2 ]] && { connected=true; break; }
    kill -0 "$WORKER" 2>/dev/null || { echo "quickstart: the worker exited; see $RUN_DIR/worker.log" >&2; cat "$RUN_DIR/worker.log" >&2; exit 1; }
    sleep 0.2
done
if ! $connected; then
    echo "quickstart: the worker did not connect within 30 s; see $RUN_DIR/worker.log" >&2
    cat "$RUN_DIR/worker.log" >&2
    exit 1
fi

messages_for() {
    sqlite3 "$HAIRDRESSERS_DB" "SELECT count(*) FROM message WHERE intent_id = '$1'"
}

# Each story's exit code, as intent-submit documents it (0 success, 3 a question, 1 a failure): another means
# the story did not go as told, and the quickstart fails at the end.
failed=()
story() {
    local number="$1" expected="$2" title="$3"
    shift 3
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
    [[ $code -eq $expected ]] || failed+=("story $number ended with exit code $code, not $expected")
}

echo
echo "IntentQueue quickstart — broker ${INTENT_BROKER_URL:-amqp://guest:***@127.0.0.1:5672/%2f}"
echo "status store $INTENT_STATUS_DB"
story 1 0 "A message to two hairdressers" SendMessage recipients=Alice,Bob "content=Running late, sorry"
story 2 3 "A message to \"Jeff\": two hairdressers are called Jeff" SendMessage recipients=Jeff "content=Can you do 3pm?"
story 3 0 "A message to the group \"co\"" SendMessage groupName=co "content=Team lunch on Friday"
story 4 0 "Two tomato soups" OrderSoup soup=tomato quantity=2
story 5 1 "A sold-out soup" OrderSoup soup=Minestrone quantity=1
echo
echo "── 6. An appointment with \"Jeff\" in 8 seconds: which Jeff is asked now, the call waits for its time"
echo "   \$ intent-submit BookAppointment hairdresser=Jeff time=15:00 --in 8s --wait"
booking="story-6-$RUN_ID"
"$BIN/intent-submit" BookAppointment hairdresser=Jeff time=15:00 --in 8s --id "$booking" --wait --timeout 30 | sed 's/^/   /' || true
echo "   \$ intent-submit --answer $booking \"hairdresser=Jeff Chen\""
"$BIN/intent-submit" --answer "$booking" "hairdresser=Jeff Chen" >/dev/null || true
# Until the recorder has the answer: scheduled again, as that turn.
for _ in $(seq 1 100); do
    [[ "$("$BIN/intent-status" "$booking" --json 2>/dev/null)" == *'"turn":1'* ]] && break
    sleep 0.1
done
"$BIN/intent-status" "$booking" | sed 's/^/   /' || true
echo "   \$ intent-status $booking --wait"
code=0
"$BIN/intent-status" "$booking" --wait --timeout 30 | sed 's/^/   /' || code=$?
[[ $code -eq 0 ]] || failed+=("story 6 ended with exit code $code, not 0")
echo
echo "Story 2 waits for an answer; give it under the same id:"
echo "   INTENT_STATUS_DB=$INTENT_STATUS_DB $BIN/intent-submit --answer story-2-$RUN_ID \"recipients=Jeff Baker\" --wait"

# The HTTP gateway, as a broker user of its own with the impersonator tag (it
# publishes as each token's user). Made here on the local node this script
# runs; a broker that is someone else's gets no new user, and no gateway.
GATEWAY_PORT="${INTENTQUEUE_GATEWAY_PORT:-8080}"
if deploy/broker.sh ctl intentqueue list_users >/dev/null 2>&1; then
    umask 077
    gateway_password="$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    echo "$gateway_password" | deploy/gateway-user.sh intentqueue / intent-gateway
    TOKEN="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    # The token acts as guest, who submitted the stories above.
    echo "$TOKEN guest producer" >"$RUN_DIR/gateway-tokens"
    INTENT_BROKER_URL="amqp://intent-gateway:$gateway_password@127.0.0.1:5672/%2f" \
        "$BIN/intent-gateway" --tokens "$RUN_DIR/gateway-tokens" --listen "127.0.0.1:$GATEWAY_PORT" </dev/null >"$RUN_DIR/gateway.out" 2>"$RUN_DIR/gateway.log" &
    GATEWAY=$!
    # Ready once its own log says it listens (another process on the port would answer /healthz too).
    listening=false
    for _ in $(seq 1 100); do
        grep -q "listening" "$RUN_DIR/gateway.log" 2>/dev/null && curl -sf "http://127.0.0.1:$GATEWAY_PORT/healthz" >/dev/null 2>&1 && { listening=true; break; }
        kill -0 "$GATEWAY" 2>/dev/null || { echo "quickstart: the gateway exited; see $RUN_DIR/gateway.log" >&2; cat "$RUN_DIR/gateway.log" >&2; exit 1; }
        sleep 0.2
    done
    $listening || { echo "quickstart: the gateway did not answer within 20 s; see $RUN_DIR/gateway.log" >&2; exit 1; }
    URL="http://127.0.0.1:$GATEWAY_PORT"
    echo
    echo "── The same over HTTP: the gateway at $URL (dashboard: $URL/#token=$TOKEN)"
    echo "   token: $TOKEN"
    echo "   \$ curl -s -H \"Authorization: Bearer \$TOKEN\" --json '{\"parameters\":{\"soup\":\"tomato\",\"quantity\":12}}' '$URL/v1/intents/OrderSoup?wait=20'"
    order="$(curl -sS -H "Authorization: Bearer $TOKEN" --json '{"id":"http-soup-'"$RUN_ID"'","parameters":{"soup":"tomato","quantity":12}}' "$URL/v1/intents/OrderSoup?wait=20")"
    echo "   $(echo "$order" | sed -n 's/.*"state":"\([a-zA-Z]*\)".*/state: \1/p') (12 soups ask for a confirmation)"
    echo "   \$ curl -s -X POST -H \"Authorization: Bearer \$TOKEN\" '$URL/v1/intents/http-soup-$RUN_ID/confirm?wait=20'"
    confirmed="$(curl -sS -X POST -H "Authorization: Bearer $TOKEN" "$URL/v1/intents/http-soup-$RUN_ID/confirm?wait=20")"
    echo "   $(echo "$confirmed" | sed -n 's/.*"message":"\([^"]*\)".*"state":"\([a-zA-Z]*\)".*/state: \2 — \1/p')"
    echo "   Answer story 2's question over HTTP:"
    echo "   curl -s -H \"Authorization: Bearer $TOKEN\" --json '{\"parameters\":{\"recipients\":[\"Jeff Baker\"]}}' '$URL/v1/intents/story-2-$RUN_ID/answer?wait=20'"
else
    echo
    echo "(No gateway: the broker on 5672 is not this script's node, so it makes no broker user there.)"
fi
echo
echo "Worker log: $RUN_DIR/worker.log"
if ((${#failed[@]} > 0)); then
    printf 'quickstart: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "$WORKER $GATEWAY" >"$RUNS/running"
echo "The worker (pid $WORKER)${GATEWAY:+ and the gateway (pid $GATEWAY)} keep running; stop them with: kill $WORKER $GATEWAY"
trap - EXIT
