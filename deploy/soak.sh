#!/usr/bin/env bash
# A steady load for a long time, to check that retention keeps the status
# store's size flat: one `intent-worker --with-recorder --retain R`, fed
# SendMessage intents at RATE per second for SECONDS, with the store's rows and
# file size (database + WAL) printed every INTERVAL seconds.
#
#   deploy/soak.sh [--rate 400] [--seconds 600] [--retain 60s] [--interval 30] [--bin .build/release]
#
# Runs in its own virtual host (iqsoak, removed at the end) on the local node
# that deploy/broker.sh ensure 5672 starts (node "intentqueue"), with its files
# under /var/tmp/intentqueue-soak. Needs amqp-tools, python3 and sqlite3.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RATE=400 SECONDS_TOTAL=600 RETAIN=60s INTERVAL=30 BIN="$HERE/../.build/release"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rate) RATE="$2"; shift 2 ;;
        --seconds) SECONDS_TOTAL="$2"; shift 2 ;;
        --retain) RETAIN="$2"; shift 2 ;;
        --interval) INTERVAL="$2"; shift 2 ;;
        --bin) BIN="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "soak.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
for tool in amqp-publish python3 sqlite3; do
    command -v "$tool" >/dev/null || { echo "soak.sh: $tool is not installed" >&2; exit 69; }
done
[[ -x "$BIN/intent-worker" ]] || { echo "soak.sh: no intent-worker in $BIN (swift build -c release)" >&2; exit 69; }

"$HERE/broker.sh" ensure 5672 >/dev/null
"$HERE/broker.sh" ctl intentqueue add_vhost iqsoak >/dev/null 2>&1 || true
"$HERE/broker.sh" ctl intentqueue set_permissions -p iqsoak guest '.*' '.*' '.*' >/dev/null
URL="amqp://guest:guest@127.0.0.1:5672/iqsoak"
DIR=/var/tmp/intentqueue-soak
rm -rf "$DIR" && mkdir -p "$DIR"
export INTENT_BROKER_URL="$URL" INTENT_STATUS_DB="$DIR/status.sqlite" HAIRDRESSERS_DB="$DIR/hairdressers.sqlite"

"$BIN/intent-worker" --with-recorder --concurrency 16 --retain "$RETAIN" --metrics-file "$DIR/metrics.prom" \
    --metrics-interval 5 >"$DIR/worker.log" 2>&1 &
WORKER=$!
PRODUCER=
cleanup() {
    [[ -n "$PRODUCER" ]] && kill "$PRODUCER" 2>/dev/null || true
    kill -TERM "$WORKER" 2>/dev/null || true
    wait "$WORKER" 2>/dev/null || true
    "$HERE/broker.sh" ctl intentqueue delete_vhost iqsoak >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q "ready;" "$DIR/worker.log" && grep -c " connected " "$DIR/worker.log" | grep -q 2 && break; sleep 0.1; done

python3 - "$RATE" "$SECONDS_TOTAL" <<'PY' | amqp-publish --url "$URL" -e intents -r SendMessage -p -C application/json -l &
import json, sys, time
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
start = time.time()
sent = 0
while time.time() - start < seconds:
    due = int((time.time() - start) * rate)
    while sent < due:
        print(json.dumps({"version": 1, "id": f"soak-{sent}", "type": "SendMessage", "submittedAt": time.time(),
                          "parameters": {"recipients": ["Alice Smith"], "content": f"soak {sent}"}}), flush=False)
        sent += 1
    sys.stdout.flush()
    time.sleep(0.01)
PY
PRODUCER=$!

size() { du -cb "$INTENT_STATUS_DB"* 2>/dev/null | tail -1 | cut -f1; }
rows() { sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT count(*) FROM intent_status" 2>/dev/null || echo "?"; }
metric() { grep "^$1" "$DIR/metrics.prom" 2>/dev/null | awk '{s+=$2} END {print s+0}'; }
printf '%8s %10s %10s %10s %12s\n' seconds received deleted rows store_bytes
started=$(date +%s)
while kill -0 "$PRODUCER" 2>/dev/null; do
    sleep "$INTERVAL"
    printf '%8s %10s %10s %10s %12s\n' $(( $(date +%s) - started )) "$(metric intentqueue_intents_received_total)" \
        "$(metric intentqueue_store_deleted_total)" "$(rows)" "$(size)"
done
wait "$PRODUCER" || true
PRODUCER=
sleep 5
printf '%8s %10s %10s %10s %12s   (after the load)\n' $(( $(date +%s) - started )) "$(metric intentqueue_intents_received_total)" \
    "$(metric intentqueue_store_deleted_total)" "$(rows)" "$(size)"
