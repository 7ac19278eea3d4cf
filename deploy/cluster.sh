#!/usr/bin/env bash
# A three-node RabbitMQ cluster on loopback for IntentQueue, built on
# deploy/broker.sh: nodes iqcluster1..3@localhost, AMQP on 127.0.0.1:BASEPORT,
# BASEPORT+1, BASEPORT+2 (default 5701-5703), Erlang distribution on
# BASEPORT+20000.. (broker.sh's default), one shared Erlang cookie.
#
#   deploy/cluster.sh start [BASEPORT]         start the three nodes, join 2 and 3 to 1, print the URLs
#   deploy/cluster.sh urls [BASEPORT]          print the URLs line (for INTENT_BROKER_URL)
#   deploy/cluster.sh status                   rabbitmqctl cluster_status via node 1 (or any running node)
#   deploy/cluster.sh stop-node N              stop node N (1..3) gracefully (rabbitmqctl stop): fail-over tests
#   deploy/cluster.sh kill-node N              kill -9 node N: a crash, for fail-over tests
#   deploy/cluster.sh start-node N [BASEPORT]  start node N again; it rejoins the cluster; waits until it runs
#   deploy/cluster.sh stop                     stop all three nodes
#
# The URLs line is comma-separated, node 1 first:
#   amqp://guest:guest@127.0.0.1:5701/%2f,amqp://guest:guest@127.0.0.1:5702/%2f,amqp://guest:guest@127.0.0.1:5703/%2f
# `start` prints only that line on stdout (progress goes to stderr), so
# INTENT_BROKER_URL="$(deploy/cluster.sh start)" works. The guest user is
# loopback-only, which is fine: every node listens on 127.0.0.1.
#
# A fresh `start` (no node of the cluster running) wipes the cluster's old node
# directories ($INTENTQUEUE_BROKER_DIR/iqcluster1..3) and writes a new random
# cookie, so the join always starts from a clean state: whatever the cluster
# held before is gone. A node that runs is never wiped. When the nodes already
# run and are clustered, `start` just prints the URLs; when only some run, it
# starts the others (they rejoin) and joins any that is not a member.
# `start-node N` keeps N's data: its mnesia directory remembers the cluster,
# so it rejoins on its own. It needs another node of the cluster running and
# refuses otherwise: a clustered node that was not the last to stop waits at
# boot (about 5 minutes) for the peers it knew. Bring a fully stopped cluster
# back with `start`, a fresh one. `stop` and `stop-node` stop gracefully, and
# kill -9 a node that has not exited 60 s later (a node stuck at boot ignores
# rabbitmqctl stop until its boot gives up).
#
# Quorum queues declared once the cluster has its three nodes get three
# replicas (a member on each node) by default; one declared before the joins
# would live on node 1 only.
#
# INTENTQUEUE_CLUSTER_NAME (default iqcluster) is the prefix of the node names
# and directories, so a test run can have a cluster of its own. The nodes get
# broker.sh's plain configuration: INTENTQUEUE_BROKER_CONF, INTENTQUEUE_DIST_PORT
# and INTENTQUEUE_BROKER_PLUGINS are ignored (three nodes on one machine would
# fight over any fixed port they name). Exit status: 64 bad arguments, 69
# rabbitmq-server missing, a node that does not start, or a cluster that does
# not form.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BROKER="$HERE/broker.sh"
BASE="${INTENTQUEUE_BROKER_DIR:-/var/tmp/intentqueue-broker}"
RABBIT_BIN="${RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}"
PREFIX="${INTENTQUEUE_CLUSTER_NAME:-iqcluster}"
DEFAULT_BASEPORT=5701
NODES=(1 2 3)
# Seconds to wait for the cluster to show a node running after its start or join.
WAIT=60
unset INTENTQUEUE_BROKER_CONF INTENTQUEUE_DIST_PORT INTENTQUEUE_BROKER_PLUGINS INTENTQUEUE_BROKER_COOKIE

usage() {
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 64
}
die() { echo "cluster.sh: $2" >&2; exit "$1"; }
say() { echo "cluster.sh: $*" >&2; }

[[ "$PREFIX" =~ ^[A-Za-z][A-Za-z0-9_-]*$ ]] || die 64 "INTENTQUEUE_CLUSTER_NAME must be letters, digits, - and _ (got '$PREFIX')"

name_of() { echo "$PREFIX$1"; }
dir_of() { echo "$BASE/$PREFIX$1"; }
ctl() { local n="$1"; shift; "$BROKER" ctl "$(name_of "$n")" "$@"; }

port_answers() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

check_baseport() {
    [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1024 && $1 + 2 + 20000 <= 65535)) ||
        die 64 "BASEPORT must be a number from 1024 to 45533 (got '$1')"
}

check_installed() {
    [[ -x "$RABBIT_BIN/rabbitmq-server" ]] || die 69 "rabbitmq-server is not installed (apt-get install rabbitmq-server)"
}

# The node's OS pid when its Erlang VM runs (its pid file names a live beam), else nothing.
pid_of() {
    local pid
    pid="$(cat "$(dir_of "$1")/rabbitmq.pid" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    # A beam whose HOME is the node's directory (the node name is not on its command line).
    local args
    args="$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null || true)"
    [[ "$(head -1 <<<"$args")" == *beam* ]] && grep -qxF "$(dir_of "$1")" <<<"$args" || return 1
    echo "$pid"
}
alive() { pid_of "$1" >/dev/null; }

# AMQP port of node N: BASEPORT+N-1 when given, else the one its rabbitmq.conf names, else the default.
port_of() {
    local n="$1" base="${2:-}" port=""
    if [[ -n "$base" ]]; then
        echo $((base + n - 1))
        return
    fi
    port="$(sed -n 's/^listeners\.tcp\.default *= *127\.0\.0\.1:\([0-9][0-9]*\) *$/\1/p' "$(dir_of "$n")/rabbitmq.conf" 2>/dev/null | head -1 || true)"
    echo "${port:-$((DEFAULT_BASEPORT + n - 1))}"
}

urls() {
    local n line=""
    for n in "${NODES[@]}"; do
        line+="${line:+,}amqp://guest:guest@127.0.0.1:$(port_of "$n" "${1:-}")/%2f"
    done
    echo "$line"
}

# cluster_status of the cluster as node N sees it: "disk" or "running" node names, space-separated.
members() {
    local n="$1" which="$2" json
    json="$(ctl "$n" cluster_status --formatter json 2>/dev/null)" || return 1
    sed -n "s/.*\"${which}_nodes\":\[\([^]]*\)\].*/\1/p" <<<"$json" | tr -d '"' | tr ',' ' '
}

first_alive() {
    local n
    for n in "${NODES[@]}"; do
        if [[ "$n" != "${1:-}" ]] && alive "$n"; then echo "$n"; return 0; fi
    done
    return 1
}

# Waits until node SEEN's cluster_status lists every one of the given nodes as running.
await_running() {
    local seen="$1" running n missing deadline=$((SECONDS + WAIT))
    shift
    while ((SECONDS < deadline)); do
        running=" $(members "$seen" running || true) "
        missing=""
        for n in "$@"; do
            [[ "$running" == *" $(name_of "$n")@localhost "* ]] || missing+=" $(name_of "$n")"
        done
        [[ -z "$missing" ]] && return 0
        sleep 0.5
    done
    die 69 "after ${WAIT} s, cluster_status via $(name_of "$seen") does not show running:$missing"
}

# Makes node N (running) a member of SEED's cluster: stop_app, join_cluster (which resets N), start_app.
# A node the cluster still lists but that no longer knows it (its directory was
# wiped) is forgotten first: join_cluster refuses it as an inconsistent cluster.
join() {
    local n="$1" seed="$2" out
    say "joining $(name_of "$n")@localhost to $(name_of "$seed")@localhost"
    out="$(ctl "$n" stop_app 2>&1)" || die 69 "stop_app on $(name_of "$n") failed: $(tail -1 <<<"$out")"
    if [[ " $(members "$seed" disk || true) " == *" $(name_of "$n")@localhost "* ]]; then
        say "$(name_of "$seed") still lists $(name_of "$n") from before its directory was wiped: forget_cluster_node first"
        out="$(ctl "$seed" forget_cluster_node "$(name_of "$n")@localhost" 2>&1)" || die 69 "forget_cluster_node $(name_of "$n") via $(name_of "$seed") failed: $(tail -1 <<<"$out")"
    fi
    out="$(ctl "$n" join_cluster "$(name_of "$seed")@localhost" 2>&1)" || die 69 "join_cluster of $(name_of "$n") to $(name_of "$seed") failed: $(tail -1 <<<"$out")"
    out="$(ctl "$n" start_app 2>&1)" || die 69 "start_app on $(name_of "$n") failed: $(tail -1 <<<"$out")"
}

# Starts node N on PORT through broker.sh (with the given cookie, if any); its output goes to stderr.
# A node that does not come up is killed, not left booting in the background.
start_one() {
    local n="$1" port="$2" cookie="${3:-}" pid
    if ! INTENTQUEUE_BROKER_COOKIE="$cookie" "$BROKER" start "$(name_of "$n")" "$port" >&2; then
        if pid="$(pid_of "$n")"; then
            kill -9 "$pid" 2>/dev/null || true
            gone "$pid" 20 || true
        fi
        die 69 "node $(name_of "$n") did not start on 127.0.0.1:$port; see $(dir_of "$n")/log"
    fi
}

# Waits up to SECONDS for process PID to be gone.
gone() {
    for _ in $(seq 1 $(($2 * 2))); do
        [[ -d "/proc/$1" ]] || return 0
        sleep 0.5
    done
    return 1
}

# Stops node N: rabbitmqctl stop, and kill -9 if its VM still runs 60 s later.
stop_one() {
    local n="$1" pid stopper
    pid="$(pid_of "$n")" || return 0
    "$BROKER" stop "$(name_of "$n")" &
    stopper=$!
    if ! gone "$pid" 60; then
        say "node $(name_of "$n") (pid $pid) still runs 60 s after rabbitmqctl stop; kill -9"
        kill -9 "$pid" 2>/dev/null || true
        gone "$pid" 20 || die 69 "node $(name_of "$n") (pid $pid) survives kill -9"
    fi
    wait "$stopper" || true
}

# One mutating command at a time per cluster (parallel tests may all call `start`).
lock() {
    mkdir -p "$BASE"
    exec 9>"$BASE/.$PREFIX.lock"
    flock -w 300 9 || die 69 "another cluster.sh has held $BASE/.$PREFIX.lock for 5 minutes"
}

cmd_start() {
    local base="${1:-}" n seed cookie port pids=() failed=0
    [[ -n "$base" ]] && check_baseport "$base"
    check_installed
    lock
    if ! seed="$(first_alive)"; then
        # Fresh: nothing of this cluster runs, so its old directories can go.
        base="${base:-$DEFAULT_BASEPORT}"
        for n in "${NODES[@]}"; do
            port=$((base + n - 1))
            port_answers "$port" && die 69 "something already listens on 127.0.0.1:$port"
            port_answers $((port + 20000)) && die 69 "something already listens on 127.0.0.1:$((port + 20000)) (node $(name_of "$n")'s distribution port)"
        done
        for n in "${NODES[@]}"; do rm -rf "$(dir_of "$n")"; done
        cookie="$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n' | tr 'a-f' 'A-F')"
        # The three boots are independent: run them side by side.
        for n in "${NODES[@]}"; do
            ( start_one "$n" $((base + n - 1)) "$cookie" ) &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
        if ((failed)); then
            for n in "${NODES[@]}"; do ( stop_one "$n" ) || true; done
            die 69 "a node did not start; the others are stopped again"
        fi
        # The joins one after another: two at once could race in the schema.
        for n in "${NODES[@]:1}"; do join "$n" 1; done
        await_running 1 "${NODES[@]}"
        say "cluster $PREFIX is up: 3 nodes running"
        urls "$base"
        return
    fi
    # Some or all nodes run: never wipe; start the missing ones and join any that is not a member.
    for n in "${NODES[@]}"; do
        if alive "$n" && [[ -n "$base" && "$(port_of "$n")" != $((base + n - 1)) ]]; then
            die 69 "cluster $PREFIX already runs on other ports ($(urls)); stop it first (deploy/cluster.sh stop)"
        fi
    done
    for n in "${NODES[@]}"; do
        alive "$n" || start_node "$n" "$base" "$seed"
    done
    for n in "${NODES[@]}"; do
        [[ "$n" == "$seed" ]] || clustered "$n" "$seed" || join "$n" "$seed"
    done
    await_running "$seed" "${NODES[@]}"
    urls "$base"
}

# Starts node N (not running) again, keeping its data; joins it to SEED's cluster if it is not a member.
start_node() {
    local n="$1" base="${2:-}" seed="${3:-}" cookie
    if [[ -z "$seed" ]]; then
        seed="$(first_alive "$n")" ||
            die 69 "no other node of cluster $PREFIX runs, and $(name_of "$n") would wait at boot for its peers; start the cluster afresh with deploy/cluster.sh start"
    fi
    # The running peer's cookie is the cluster's (a wiped node has none of its own).
    cookie="$(cat "$(dir_of "$seed")/.erlang.cookie")"
    start_one "$n" "$(port_of "$n" "$base")" "$cookie"
    clustered "$n" "$seed" || join "$n" "$seed"
    await_running "$seed" "$n"
}

# Whether running node N itself counts SEED among its cluster's nodes.
clustered() {
    [[ " $(members "$1" disk || true) " == *" $(name_of "$2")@localhost "* ]]
}

cmd_start_node() {
    local n="$1" base="${2:-}"
    [[ "$n" =~ ^[123]$ ]] || usage
    [[ -n "$base" ]] && check_baseport "$base"
    check_installed
    lock
    if alive "$n"; then
        say "node $(name_of "$n")@localhost already runs"
    else
        start_node "$n" "$base"
    fi
    say "node $(name_of "$n")@localhost runs on 127.0.0.1:$(port_of "$n" "$base")"
}

cmd_stop_node() {
    local n="$1"
    [[ "$n" =~ ^[123]$ ]] || usage
    lock
    if ! alive "$n"; then
        say "node $(name_of "$n")@localhost is not running"
        return 0
    fi
    stop_one "$n"
    say "node $(name_of "$n")@localhost stopped"
}

cmd_kill_node() {
    local n="$1" pid
    [[ "$n" =~ ^[123]$ ]] || usage
    lock
    pid="$(pid_of "$n")" || { say "node $(name_of "$n")@localhost is not running"; return 0; }
    kill -9 "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    say "node $(name_of "$n")@localhost killed (kill -9 of pid $pid)"
}

cmd_stop() {
    local n pids=() failed=0
    lock
    for n in "${NODES[@]}"; do
        ( stop_one "$n" ) &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    ((failed == 0)) || exit 69
    say "cluster $PREFIX stopped"
}

cmd_status() {
    local n
    n="$(first_alive)" || die 69 "no node of cluster $PREFIX is running"
    ctl "$n" cluster_status
}

case "${1:-}" in
    start) (($# <= 2)) || usage; cmd_start "${2:-}" ;;
    urls)
        (($# <= 2)) || usage
        [[ -n "${2:-}" ]] && check_baseport "$2"
        urls "${2:-}"
        ;;
    status) (($# == 1)) || usage; cmd_status ;;
    stop-node) (($# == 2)) || usage; cmd_stop_node "$2" ;;
    kill-node) (($# == 2)) || usage; cmd_kill_node "$2" ;;
    start-node) (($# == 2 || $# == 3)) || usage; cmd_start_node "$2" "${3:-}" ;;
    stop) (($# == 1)) || usage; cmd_stop ;;
    *) usage ;;
esac
