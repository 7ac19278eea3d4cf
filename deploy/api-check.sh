#!/usr/bin/env bash
# Property-based check of a running intent-gateway against deploy/gateway/openapi.yaml,
# with schemathesis (pip install schemathesis; 4.x, or 3.x best-effort):
#
#   deploy/api-check.sh [--url URL] [--token TOKEN] [--examples N] [-- SCHEMATHESIS_ARGS...]
#
# URL defaults to $GATEWAY_URL, else http://127.0.0.1:8080; TOKEN ($GATEWAY_TOKEN) is required
# (an operator's token reaches every operation; a producer's gets 403 on /v1/dead). N
# ($API_CHECK_EXAMPLES, default 1000) is the least number of generated requests wanted: it is
# spread over the operations that take inputs (schemathesis' count is per operation). Also:
# API_CHECK_SEED (reproduce a run), API_CHECK_WORKERS (concurrent workers, default 1).
# Checks: no 5xx, status codes, content types and response bodies as documented. Exits 1 when
# schemathesis finds a failure; reports land in .build/api-check/.
set -euo pipefail
cd "$(dirname "$0")/.."

url="${GATEWAY_URL:-http://127.0.0.1:8080}"
token="${GATEWAY_TOKEN:-}"
examples="${API_CHECK_EXAMPLES:-1000}"
workers="${API_CHECK_WORKERS:-1}"
seed="${API_CHECK_SEED:-}"
while (($#)); do
    case "$1" in
        --url) url="$2"; shift 2 ;;
        --token) token="$2"; shift 2 ;;
        --examples) examples="$2"; shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "api-check.sh: unknown argument '$1'" >&2; exit 64 ;;
    esac
done
[[ -n "$token" ]] || { echo "api-check.sh: a token is needed (--token or GATEWAY_TOKEN)" >&2; exit 64; }
[[ "$examples" =~ ^[1-9][0-9]*$ && "$workers" =~ ^[1-9][0-9]*$ ]] || { echo "api-check.sh: --examples and API_CHECK_WORKERS take positive whole numbers" >&2; exit 64; }
command -v schemathesis >/dev/null || { echo "api-check.sh: schemathesis is not installed (pip install schemathesis)" >&2; exit 69; }

schema=deploy/gateway/openapi.yaml
out=.build/api-check
mkdir -p "$out"
rm -f "$out/requests"

# The two event streams are left out: GET /v1/events never ends by itself, and
# GET /v1/intents/{id}/events only ends after a terminal event, so schemathesis would wait on
# them until its request timeout. They need a streaming client (the gateway's own tests).
excluded=(/v1/events '/v1/intents/{id}/events')

# Operations whose requests vary (parameters or a body): the others (/healthz, /metrics, the
# dashboard files, /v1/stats) give one request or a handful whatever the count, so the total
# is spread over these.
varying=$(python3 - "$schema" "${excluded[@]}" <<'EOF'
import sys, yaml
schema, excluded = yaml.safe_load(open(sys.argv[1])), set(sys.argv[2:])
methods = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
print(sum(1 for path, item in schema["paths"].items() if path not in excluded
          for method, op in item.items() if method in methods
          and (op.get("parameters") or item.get("parameters") or op.get("requestBody"))))
EOF
)
per_operation=$(( (examples + varying - 1) / varying ))

# Generated `wait` values go up to 300 s (the contract's range, kept in the schema); the hooks
# lower them to 1 s just before each request is sent, so that a wait on an intent that exists
# does not hold the run for minutes, and they count the requests sent (see the hook file).
export PYTHONPATH="deploy/gateway${PYTHONPATH:+:$PYTHONPATH}"
export SCHEMATHESIS_HOOKS=schemathesis_hooks
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ beside the hook file
export API_CHECK_COUNT_FILE="$out/requests"

checks=(not_a_server_error status_code_conformance content_type_conformance response_schema_conformance)
version=$(schemathesis --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -1)
case "${version%%.*}" in
    4)
        args=(run "$schema" --url "$url" -H "Authorization: Bearer $token"
              --checks "$(IFS=,; echo "${checks[*]}")" --max-examples "$per_operation"
              --workers "$workers" --request-timeout 15
              --generation-database "$out/examples"
              --report junit,json --report-junit-path "$out/junit.xml" --report-json-path "$out/report.json")
        for path in "${excluded[@]}"; do args+=(--exclude-path "$path"); done
        [[ -z "$seed" ]] || args+=(--seed "$seed")
        ;;
    3)
        # Untested here (4.x is what pip installs now); 3.x's request timeout is in milliseconds.
        args=(run "$schema" --base-url "$url" -H "Authorization: Bearer $token"
              --hypothesis-max-examples "$per_operation" --workers "$workers" --request-timeout 15000
              --hypothesis-database "$out/examples" --junit-xml "$out/junit.xml")
        for check in "${checks[@]}"; do args+=(--checks "$check"); done
        for path in "${excluded[@]}"; do args+=(--exclude-path "$path"); done
        [[ -z "$seed" ]] || args+=(--hypothesis-seed "$seed")
        ;;
    *) echo "api-check.sh: schemathesis ${version:-of an unknown version} is not supported (3.x or 4.x)" >&2; exit 69 ;;
esac

echo "api-check.sh: schemathesis $version against $url: $per_operation examples for each of $varying varying operations (target $examples requests), event streams excluded"
rc=0
schemathesis "${args[@]}" "$@" || rc=$?

if [[ -s "$out/requests" ]]; then
    sent=$(<"$out/requests")
    echo "api-check.sh: $sent requests sent"
    ((sent >= examples)) || echo "api-check.sh: fewer requests than the $examples asked for; raise --examples" >&2
fi
if ((rc != 0)); then
    echo "api-check.sh: schemathesis found problems (exit $rc); reports in $out/" >&2
    exit 1
fi
echo "api-check.sh: no failures"
