#!/usr/bin/env bash
# The gateway under load, on loopback, against the local broker (5672):
#   1. the producer phase of intent-bench (the windowed publisher intent-submit uses) for
#      the rate to compare with;
#   2. wrk POSTing SendMessage submissions to the gateway for --seconds, on --connections
#      connections (default 256: as many submissions in flight as the publisher keeps, 2
#      producers with a window of 128 each, since the rate of both follows it), while the recorder
#      records them (a) with no worker, so they queue, as the benchmark's producers outrun its
#      workers, and (b) with a worker handling them at the same time;
#   3. --polls long polls (?wait=) held open for --hold seconds on intents queued while no
#      worker runs: the gateway's RSS then; then a worker starts and every poll must be
#      answered with its intent's terminal state.
# Prints the figures the README quotes. Needs the release build (deploy/quickstart.sh or
# deploy/build-release.sh) and wrk (Debian's).
#
#   deploy/gateway-load.sh [--seconds S] [--connections C] [--polls N] [--hold S]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=15
connections=256
polls=1000
hold=60
while (($#)); do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        --polls) polls="$2"; shift 2 ;;
        --hold) hold="$2"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gateway-load.sh: unknown argument '$1'" >&2; exit 64 ;;
    esac
done
ulimit -n 65536 2>/dev/null || true
command -v wrk >/dev/null || { echo "gateway-load.sh: wrk is not installed (apt-get install wrk)" >&2; exit 69; }
BIN="$(deploy/build-release.sh --show-bin-path)"
for tool in intent-worker intent-gateway intent-bench; do
    [[ -x "$BIN/$tool" ]] || { echo "gateway-load.sh: $BIN/$tool is missing: build the release first" >&2; exit 69; }
done
deploy/broker.sh ensure 5672 >/dev/null

suffix="$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
vhost="gateway-load-$suffix"
user="gateway-load-$suffix"
password="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
run=".build/gateway-load/$suffix"
mkdir -p "$run"
ctl() { deploy/broker.sh ctl intentqueue "$@" >/dev/null; }
pids=()
worker=""
cleanup() {
    for pid in "${pids[@]}" $worker; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}" $worker; do wait "$pid" 2>/dev/null || true; done
    ctl delete_vhost "$vhost" 2>/dev/null || true
    ctl delete_user "$user" 2>/dev/null || true
}
trap cleanup EXIT
ctl add_vhost "$vhost"
ctl set_permissions -p "$vhost" guest '.*' '.*' '.*'
echo "$password" | deploy/gateway-user.sh intentqueue "$vhost" "$user"
guest_url="amqp://guest:guest@127.0.0.1:5672/$vhost"

echo "gateway-load: 1. intent-bench's producer phase (20,000 intents, 2 producers, window 128)"
bench="$(INTENT_BROKER_URL="$guest_url" "$BIN/intent-bench" --intents 20000 --skip-ceiling --latency-intents 0 2>&1)"
producers="$(echo "$bench" | sed -n 's/.*producers done (last confirm): end to end \([0-9.]*\) s.*/\1/p')"
producer_rate="$(python3 -c "print(round(20000 / $producers))")"
echo "   the windowed publisher: 20,000 submissions confirmed in $producers s = $producer_rate /s"

# One process started in the background, and waited for until it has made `connections` connections.
start_service() {
    local log="$1" connections="$2"
    shift 2
    INTENT_BROKER_URL="$guest_url" INTENT_STATUS_DB="$run/status.sqlite" HAIRDRESSERS_DB="$run/hairdressers.sqlite" \
        "$BIN/intent-worker" "$@" 2>"$log" &
    started=$!
    for _ in $(seq 1 300); do
        [[ $(grep -c " connected " "$log" || true) -ge "$connections" ]] && return
        sleep 0.2
    done
    echo "gateway-load: intent-worker $* did not connect (see $log)" >&2
    exit 1
}
start_service "$run/recorder.log" 1 --recorder-only
pids+=("$started")
# A worker once, so that the work queue and its bindings exist while none runs (else every
# submission would come back: no worker serves the type).
start_service "$run/worker-0.log" 1
kill -TERM "$started"
wait "$started" 2>/dev/null || true

token="load-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
umask 077
echo "$token guest producer" >"$run/tokens"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
INTENT_BROKER_URL="amqp://$user:$password@127.0.0.1:5672/$vhost" \
    "$BIN/intent-gateway" --tokens "$run/tokens" --listen "127.0.0.1:$port" --log-level warning 2>"$run/gateway.log" &
gateway=$!
pids+=("$gateway")
url="http://127.0.0.1:$port"
for _ in $(seq 1 300); do curl -sf "$url/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

cat >"$run/submit.lua" <<EOF
wrk.method = "POST"
wrk.body = '{"parameters":{"recipients":["Alice"],"content":"load"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
done = function(summary, latency, requests)
    io.write(string.format("   non-2xx/3xx %d, errors %d\n", summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
EOF
load() {
    wrk -t1 -c"$connections" -d"${seconds}s" --latency -s "$run/submit.lua" "$url/v1/intents/SendMessage" | tee "$run/wrk-$1.txt" | sed 's/^/   /'
    local rate
    rate="$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$run/wrk-$1.txt")"
    echo "   the gateway ($1): $rate submissions/s = $(python3 -c "print(round(100 * $rate / $producer_rate))") % of the windowed publisher's $producer_rate /s"
    echo "   gateway CPU so far: $(awk '{print ($14 + $15) / 100}' "/proc/$gateway/stat") s"
    if grep -q "Non-2xx" "$run/wrk-$1.txt"; then
        echo "gateway-load: some submissions were not accepted (see $run/gateway.log)" >&2
        exit 1
    fi
}
echo "gateway-load: 2a. wrk: POST /v1/intents/SendMessage, $connections connections, $seconds s, no worker (they queue)"
load queued
start_service "$run/worker.log" 1 --concurrency 64
worker="$started"
echo "gateway-load: 2b. the same with a worker handling them meanwhile"
load handled

echo "gateway-load: 3. $polls long polls held $hold s"
kill -TERM "$worker"
wait "$worker" 2>/dev/null || true
worker=""
# The queue still holds what 2a left: purged, so the polls' intents are the next the worker runs.
ctl purge_queue -p "$vhost" intents.work
python3 - "$url" "$token" "$polls" "$hold" "$gateway" "$run" <<'PY' &
import asyncio, json, sys, time
url, token, polls, hold, gateway, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
host, port = url.split("//")[1].split(":")
def rss():
    fields = dict(line.split(":", 1) for line in open(f"/proc/{gateway}/status"))
    return fields["VmRSS"].strip(), fields["VmHWM"].strip()
async def request(method, path, body=b""):
    reader, writer = await asyncio.open_connection(host, int(port))
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    data = await reader.read()
    writer.close()
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1] or b"{}")
async def main():
    ids = [f"poll-{i}" for i in range(polls)]
    for start in range(0, polls, 100):
        answers = await asyncio.gather(*(request("POST", "/v1/intents/SendMessage", json.dumps({"id": i, "parameters": {"recipients": ["Alice"], "content": "later"}}).encode()) for i in ids[start:start + 100]))
        assert all(status == 202 for status, _ in answers), answers[:3]
    print(f"   {polls} intents queued (no worker runs); gateway RSS before the polls: {rss()[0]}", flush=True)
    began = time.time()
    waits = [asyncio.create_task(request("GET", f"/v1/intents/{i}?wait=300")) for i in ids]
    await asyncio.sleep(hold)
    open_now = sum(1 for task in waits if not task.done())
    now, peak = rss()
    print(f"   after {hold:.0f} s: {open_now} of {polls} polls still open; gateway RSS {now} (peak {peak})", flush=True)
    open(f"{run}/polls-held", "w").write("held\n")
    answers = await asyncio.gather(*waits)
    states = {}
    for status, body in answers:
        states[(status, body.get("state"))] = states.get((status, body.get("state")), 0) + 1
    print(f"   every poll answered {time.time() - began:.1f} s after it began: {states}", flush=True)
    sys.exit(0 if states == {(200, "success"): polls} else 1)
asyncio.run(main())
PY
polls_pid=$!
while [[ ! -f "$run/polls-held" ]] && kill -0 "$polls_pid" 2>/dev/null; do sleep 0.5; done
start_service "$run/worker-2.log" 1 --concurrency 64
worker="$started"
wait "$polls_pid"
