#!/usr/bin/env bash
# The gateway from the outside, as a browser and an API client see it: a fresh
# virtual host on the local broker (5672), a Hairdressers worker with the
# recorder, and intent-gateway in front of them; then
#   1. the dashboard in headless Chromium driven by Selenium (Tests/Browser/dashboard_test.py):
#      the counts after a known workload, a question answered by a click, a dead letter
#      requeued by a click, one intent's page, a screenshot;
#   2. the property-based check of deploy/gateway/openapi.yaml with schemathesis
#      (deploy/api-check.sh, at least 1,000 generated requests): no 5xx, nothing the schema
#      does not allow;
#   3. hostile HTTP input (Tests/HTTP/hostile_test.py): oversized headers and bodies,
#      slowloris, invalid UTF-8, path traversal, huge numbers, 10,000 idle connections.
#
#   deploy/gateway-check.sh [--screenshot PATH] [--skip-browser] [--skip-api] [--skip-hostile]
#
# Needs the debug build (swift build), chromium, chromium-driver, selenium and
# schemathesis (deploy/install.sh --test-tools installs them). Everything it starts is
# stopped by its pid, and the virtual host and user are deleted, at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

screenshot=".build/gateway-check/dashboard.png"
browser=1
api=1
hostile=1
while (($#)); do
    case "$1" in
        --screenshot) screenshot="$2"; shift 2 ;;
        --skip-browser) browser=0; shift ;;
        --skip-api) api=0; shift ;;
        --skip-hostile) hostile=0; shift ;;
        -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gateway-check.sh: unknown argument '$1'" >&2; exit 64 ;;
    esac
done

BIN="$(swift build --show-bin-path)"
for tool in intent-worker intent-gateway; do
    [[ -x "$BIN/$tool" ]] || { echo "gateway-check.sh: $BIN/$tool is missing: swift build first" >&2; exit 69; }
done
deploy/broker.sh ensure 5672 >/dev/null

suffix="$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
vhost="gateway-check-$suffix"
user="gateway-check-$suffix"
password="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
run=".build/gateway-check/$suffix"
mkdir -p "$run" "$(dirname "$screenshot")"
# A coverage build's tools write profiles: into the run's folder unless the caller says where.
export LLVM_PROFILE_FILE="${LLVM_PROFILE_FILE:-$PWD/$run/%p.profraw}"
ctl() { deploy/broker.sh ctl intentqueue "$@" >/dev/null; }

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    ctl delete_vhost "$vhost" 2>/dev/null || true
    ctl delete_user "$user" 2>/dev/null || true
}
trap cleanup EXIT

ctl add_vhost "$vhost"
ctl set_permissions -p "$vhost" guest '.*' '.*' '.*'
echo "$password" | deploy/gateway-user.sh intentqueue "$vhost" "$user"

guest_url="amqp://guest:guest@127.0.0.1:5672/$vhost"
INTENT_BROKER_URL="$guest_url" INTENT_STATUS_DB="$run/status.sqlite" HAIRDRESSERS_DB="$run/hairdressers.sqlite" \
    "$BIN/intent-worker" --with-recorder --operator-user guest 2>"$run/worker.log" &
pids+=($!)
for _ in $(seq 1 300); do
    [[ $(grep -c " connected " "$run/worker.log" || true) -ge 2 ]] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$run/worker.log" >&2; exit 1; }
    sleep 0.2
done

operator_token="operator-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
producer_token="producer-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
umask 077
printf '%s guest operator\n%s nobody-%s producer\n' "$operator_token" "$producer_token" "$suffix" >"$run/tokens"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
INTENT_BROKER_URL="amqp://$user:$password@127.0.0.1:5672/$vhost" \
    "$BIN/intent-gateway" --tokens "$run/tokens" --listen "127.0.0.1:$port" --idle-timeout 5 2>"$run/gateway.log" &
pids+=($!)
url="http://127.0.0.1:$port"
for _ in $(seq 1 300); do
    curl -sf "$url/healthz" >/dev/null 2>&1 && break
    kill -0 "${pids[1]}" 2>/dev/null || { cat "$run/gateway.log" >&2; exit 1; }
    sleep 0.2
done
curl -sf "$url/healthz" >/dev/null || { echo "gateway-check.sh: the gateway never became healthy" >&2; cat "$run/gateway.log" >&2; exit 1; }

status=0
if ((browser)); then
    # A dead letter to requeue: a SendMessage that can succeed, published to the dead-letter exchange.
    dead="dead-$suffix"
    printf '{"version":1,"id":"%s","type":"SendMessage","submittedAt":%s,"parameters":{"recipients":["Alice Smith"],"content":"back from the dead"}}' \
        "$dead" "$(date +%s)" |
        amqp-publish --url="$guest_url" --exchange=intents.dead --routing-key=SendMessage --persistent \
            --content-type=application/json
    python3 -B Tests/Browser/dashboard_test.py --url "$url" --token "$operator_token" --producer-token "$producer_token" \
        --dead-id "$dead" --screenshot "$screenshot" || status=1
fi
if ((api)); then
    GATEWAY_URL="$url" GATEWAY_TOKEN="$operator_token" deploy/api-check.sh || status=1
fi
if ((hostile)); then
    python3 -B Tests/HTTP/hostile_test.py --url "$url" --token "$operator_token" --idle-timeout 5 || status=1
    kill -0 "${pids[1]}" 2>/dev/null || { echo "gateway-check.sh: the gateway died under hostile input" >&2; status=1; }
fi
((status == 0)) || { echo "gateway-check.sh: failed; logs in $run" >&2; tail -20 "$run/gateway.log" >&2; }
exit "$status"
