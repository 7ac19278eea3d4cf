#!/usr/bin/env bash
# Memory over a long run, and the cost of one lookup on the store it leaves:
# one `intent-worker` and one `intent-worker --recorder-only`, as separate
# processes, fed N SendMessage intents (generated envelopes through
# `amqp-publish -l`, as fast as they are taken); the VmRSS of both is printed
# every STEP intents recorded, then `intent-status <id>` on the N-intent store is
# timed as a whole process (median of 100 runs), against `--help`.
#
#   deploy/memory.sh [--intents 1000000] [--step 100000] [--bin .build/release] [--keep]
#
# Runs in its own virtual host (iqmemory, removed at the end) on the local node
# deploy/broker.sh ensure 5672 starts, with its files under
# /var/tmp/intentqueue-memory (removed at the end unless --keep). Needs
# amqp-tools, python3 and sqlite3.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTENTS=1000000 STEP=100000 BIN="$HERE/../.build/release" KEEP=no
while [[ $# -gt 0 ]]; do
    case "$1" in
        --intents) INTENTS="$2"; shift 2 ;;
        --step) STEP="$2"; shift 2 ;;
        --bin) BIN="$2"; shift 2 ;;
        --keep) KEEP=yes; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "memory.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
[[ "$INTENTS" =~ ^[0-9]+$ && "$STEP" =~ ^[0-9]+$ && "$STEP" -gt 0 ]] || { echo "memory.sh: --intents and --step take whole numbers" >&2; exit 64; }
for tool in amqp-publish python3 sqlite3; do
    command -v "$tool" >/dev/null || { echo "memory.sh: $tool is not installed" >&2; exit 69; }
done
for tool in intent-worker intent-status; do
    [[ -x "$BIN/$tool" ]] || { echo "memory.sh: no $tool in $BIN (swift build -c release)" >&2; exit 69; }
done

"$HERE/broker.sh" ensure 5672 >/dev/null
"$HERE/broker.sh" ctl intentqueue delete_vhost iqmemory >/dev/null 2>&1 || true
"$HERE/broker.sh" ctl intentqueue add_vhost iqmemory >/dev/null
"$HERE/broker.sh" ctl intentqueue set_permissions -p iqmemory guest '.*' '.*' '.*' >/dev/null
URL="amqp://guest:guest@127.0.0.1:5672/iqmemory"
DIR=/var/tmp/intentqueue-memory
rm -rf "$DIR" && mkdir -p "$DIR"
export INTENT_BROKER_URL="$URL" INTENT_STATUS_DB="$DIR/status.sqlite" HAIRDRESSERS_DB="$DIR/hairdressers.sqlite"

"$BIN/intent-worker" --recorder-only >"$DIR/recorder.log" 2>&1 &
RECORDER=$!
"$BIN/intent-worker" --concurrency 16 >"$DIR/worker.log" 2>&1 &
WORKER=$!
PRODUCER=
cleanup() {
    touch "$DIR/published"
    [[ -n "$PRODUCER" ]] && kill "$PRODUCER" 2>/dev/null || true
    for pid in "$WORKER" "$RECORDER"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait "$WORKER" "$RECORDER" 2>/dev/null || true
    "$HERE/broker.sh" ctl intentqueue delete_vhost iqmemory >/dev/null 2>&1 || true
    [[ "$KEEP" == yes ]] || rm -rf "$DIR"
}
trap cleanup EXIT
for log in recorder worker; do
    for _ in $(seq 1 150); do grep -q " connected " "$DIR/$log.log" && break; sleep 0.2; done
    grep -q " connected " "$DIR/$log.log" || { echo "memory.sh: the $log did not connect:" >&2; cat "$DIR/$log.log" >&2; exit 1; }
done

# amqp-publish has no confirms, and a channel closed while a quorum queue still has some of its publishes to apply
# can lose them (one run lost the last 13 of 1,000,000 so): the generator keeps its input, and so the channel,
# open until every intent is recorded (the file "published", also written when the run ends otherwise).
python3 - "$INTENTS" "$DIR/published" <<'PY' | amqp-publish --url "$URL" -e intents -r SendMessage -p -C application/json -l &
import json, os, sys, time
for n in range(int(sys.argv[1])):
    print(json.dumps({"version": 1, "id": f"memory-{n}", "type": "SendMessage", "submittedAt": time.time(),
                      "parameters": {"recipients": ["Alice Smith"], "content": f"memory {n}"}}))
sys.stdout.flush()
while not os.path.exists(sys.argv[2]) and os.getppid() != 1:
    time.sleep(0.2)
PY
PRODUCER=$!

rss() { awk '/^VmRSS/ {printf "%.2f", $2 / 1024}' "/proc/$1/status"; }
recorded() { sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT count(*) FROM intent_status WHERE state = 'success'" 2>/dev/null || echo 0; }
printf '%10s %9s %12s %14s\n' recorded seconds "worker MB" "recorder MB"
started=$(date +%s)
next=$STEP
last_progress=$started last_count=0
while true; do
    count="$(recorded)"
    if (( count >= next || count >= INTENTS )); then
        printf '%10s %9s %12s %14s\n' "$count" $(( $(date +%s) - started )) "$(rss "$WORKER")" "$(rss "$RECORDER")"
        (( count >= INTENTS )) && { touch "$DIR/published"; break; }
        while (( next <= count )); do next=$((next + STEP)); done
    fi
    if (( count > last_count )); then last_count=$count last_progress=$(date +%s); fi
    if (( $(date +%s) - last_progress > 60 )); then
        echo "memory.sh: no intent recorded for 60 s at $count of $INTENTS; logs in $DIR" >&2
        # Where the rest are: still in the broker (ready, or delivered and unacked), or in the store in another state.
        "$HERE/broker.sh" ctl intentqueue list_queues -p iqmemory name messages_ready messages_unacknowledged consumers \
            --silent >&2 2>/dev/null || true
        "$HERE/broker.sh" ctl intentqueue list_channels vhost connection messages_unacknowledged messages_unconfirmed \
            prefetch_count --silent >&2 2>/dev/null || true
        sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT state, count(*) FROM intent_status GROUP BY state" >&2 || true
        KEEP=yes
        exit 1
    fi
    kill -0 "$WORKER" 2>/dev/null && kill -0 "$RECORDER" 2>/dev/null || { echo "memory.sh: a process exited; logs in $DIR" >&2; KEEP=yes; exit 1; }
    sleep 1
done
wait "$PRODUCER" || true
PRODUCER=

echo
echo "store: $(du -cb "$INTENT_STATUS_DB"* | tail -1 | cut -f1) bytes, $(recorded) intents success"
libraries="$(ldd "$BIN/intent-status")"
grep -q libswiftCore <<<"$libraries" && linkage="the Swift runtime linked dynamically" || linkage="the Swift runtime linked statically"
grep -q 'libstdc++' <<<"$libraries" && linkage+=", libstdc++ dynamically" || linkage+=", libstdc++ too"
echo "intent-status as a whole process, $linkage (median of 100 runs after 5 warm-ups):"
python3 - "$BIN/intent-status" "memory-$((INTENTS / 2))" <<'PY'
import statistics, subprocess, sys, time
tool, intent = sys.argv[1], sys.argv[2]
for arguments in ([intent], ["--help"]):
    times = []
    for run in range(105):
        start = time.perf_counter()
        subprocess.run([tool, *arguments], stdout=subprocess.DEVNULL, check=True)
        if run >= 5:
            times.append(1000 * (time.perf_counter() - start))
    print(f"  intent-status {' '.join(arguments)}: median {statistics.median(times):.2f} ms, min {min(times):.2f}, max {max(times):.2f}")
PY
