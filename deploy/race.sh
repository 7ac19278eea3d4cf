#!/usr/bin/env bash
# The long runs of outcome truth, against real RabbitMQ nodes and SQLite files:
#
#   deploy/race.sh [--intents N] [--rounds R] [--seed S] [--no-load]
#
# 1. RaceTests with N intents (default 2000) over two worker processes: cancels,
#    answers, confirmations, denials, expiring questions (2 s to live) and time
#    limits (0.3 s against calls of 0.05-0.6 s) fired at random moments against
#    each other. Every intent's stored outcome is compared with the app's rows
#    and its ledger: 0 contradictions, 0 lost, 0 duplicated effects, 0 conflicts.
#    --seed replays one run (the seed is printed either way).
# 2. ReadYourWritesTests with R rounds (default 1000): intent-submit --wait (or
#    intent-status --wait --remote), then at once intent-status locally and
#    remotely, while intent-bench keeps both cores busy beside it (--no-load
#    leaves the machine quiet): no read may report an older state.
#
# The figures go to standard output (lines "race: ..." and "read-your-writes: ...").
set -euo pipefail
cd "$(dirname "$0")/.."

intents=2000
rounds=1000
seed=""
load=1
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
while (($#)); do
    case "$1" in
        --intents) intents="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --no-load) load=0; shift ;;
        -h|--help) usage ;;
        *) echo "race.sh: unknown argument '$1'" >&2; usage ;;
    esac
done

deploy/install.sh
deploy/broker.sh ensure 5672
bench_pid=""
cleanup() {
    if [[ -n "$bench_pid" ]]; then
        kill -- "-$bench_pid" 2>/dev/null || kill "$bench_pid" 2>/dev/null || true
        wait "$bench_pid" 2>/dev/null || true
    fi
    deploy/broker.sh stop iqtest
}
trap cleanup EXIT

swift build --build-tests
bin="$(swift build --show-bin-path)"

echo "race.sh: $intents raced intents${seed:+ (seed $seed)}"
INTENTQUEUE_RACE_INTENTS="$intents" INTENTQUEUE_RACE_SEED="$seed" \
    swift test --skip-build --filter RaceTests 2>&1 | tee .build/race-output.txt | grep -E '^race:|✘|error' || true
grep -q 'passed after' <(grep 'racingRequests' .build/race-output.txt) || { echo "race.sh: the race run failed (.build/race-output.txt)" >&2; exit 1; }

if ((load)); then
    # Both cores kept busy: benchmark runs one after another, in a process group of their own.
    set -m
    ( while true; do "$bin/intent-bench" --intents 20000 --latency-intents 0 --skip-ceiling >/dev/null 2>&1 || sleep 1; done ) &
    bench_pid=$!
    set +m
    echo "race.sh: intent-bench running beside the read-your-writes rounds (pid $bench_pid)"
fi
echo "race.sh: $rounds read-your-writes rounds"
INTENTQUEUE_RYW_ROUNDS="$rounds" swift test --skip-build --filter ReadYourWritesTests 2>&1 | tee .build/ryw-output.txt \
    | grep -E '^read-your-writes:|✘|error' || true
grep -q 'passed after' <(grep 'aReportedState' .build/ryw-output.txt) || { echo "race.sh: the read-your-writes run failed (.build/ryw-output.txt)" >&2; exit 1; }
echo "race.sh: passed"
