#!/usr/bin/env bash
# Installs what is missing, starts a local RabbitMQ on loopback when none
# answers, builds, and runs every test. Integration tests start their own
# broker nodes (deploy/broker.sh, ports 5690-5697), a three-node cluster
# (deploy/cluster.sh, 5711-5713), and the chaos run one more node (5693); all
# are stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install.sh --test-tools
deploy/broker.sh ensure 5672

stop_test_nodes() {
    for node in iqtest iqtest-restart iqtest-freeze iqtest-tls iqtest-gateway iqtest-kept; do deploy/broker.sh stop "$node"; done
    INTENTQUEUE_CLUSTER_NAME=iqtestcluster deploy/cluster.sh stop >/dev/null 2>&1 || true
}
trap stop_test_nodes EXIT

# The style first: it takes seconds and needs no build.
swift-format lint --strict -r Sources Tests Examples

# Built with coverage instrumentation, so that the tools the integration tests
# start write their profiles too (they inherit LLVM_PROFILE_FILE).
swift build --build-tests --enable-code-coverage
# Every test but a few, in parallel; then the few alone: starting three
# RabbitMQ nodes beside thirty busy suites starves everything on two cores, the
# --wait latency it prints means little on a machine that is saturated, and the
# examples' and the release build's compiles took both cores from the suites
# whose schedules run on time.
# Each `swift test --enable-code-coverage` starts by emptying the profile
# folder, so the profiles of each run are moved aside before the next.
CODECOV="$(swift build --show-bin-path)/codecov"
PROFILES=.build/coverage-profiles
rm -rf "$PROFILES" && mkdir -p "$PROFILES"
rm -f "$CODECOV"/*.profraw
run_tests() {
    swift test --skip-build --enable-code-coverage "$@" 2>&1 | tee -a .build/test-output.txt
    local kept="$PROFILES/run-$(find "$PROFILES" -mindepth 1 -maxdepth 1 | wc -l)"
    mkdir -p "$kept"
    find "$CODECOV" -maxdepth 1 -name '*.profraw' -exec mv {} "$kept/" \;
}
: >.build/test-output.txt
run_tests --skip 'ClusterTests|waitLatencyAfterTheTerminalEvent|ExampleTests|ReleaseBuildTests'
run_tests --filter 'ExampleTests|ReleaseBuildTests'
run_tests --filter ClusterTests
run_tests --filter waitLatencyAfterTheTerminalEvent
# The gateway from the outside: the dashboard in headless Chromium, and the
# OpenAPI file checked against the running gateway by schemathesis (its
# profiles count for coverage too).
LLVM_PROFILE_FILE="$CODECOV/gateway-check-%p.profraw" deploy/gateway-check.sh
mkdir -p "$PROFILES/gateway-check"
find "$CODECOV" -maxdepth 1 -name '*.profraw' -exec mv {} "$PROFILES/gateway-check/" \;
INTENTQUEUE_PROFILES="$PROFILES" deploy/coverage.sh

# The documentation, with warnings as errors.
deploy/docs.sh

# A small benchmark run, so that the benchmark itself never breaks (figures
# from a machine busy with tests mean little; see the README's Performance).
"$(swift build --show-bin-path)/intent-bench" --intents 500 --latency-intents 200
# The frame counter behind the broker-frame figures reads a capture made up for it.
python3 deploy/frames.py --self-test

# The short fault-injection run: 1,000 intents through worker kills, a broker
# restart, closed connections and a frozen broker; nothing lost or done twice.
deploy/chaos.sh --intents 1000

# The same faults while scheduled intents come due: each released when due, none lost,
# run twice or started early (deploy/chaos.sh --intents 1000 --schedule-over 60 for the figures).
deploy/chaos.sh --intents 300 --schedule-over 20
