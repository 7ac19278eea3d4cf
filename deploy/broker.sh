#!/usr/bin/env bash
# Starts and stops RabbitMQ nodes for IntentQueue on loopback, each in its own
# directory (data, logs, config, Erlang cookie), so a development machine or a
# test run can have several without touching a system-wide broker.
#
#   deploy/broker.sh ensure [PORT]        start node "intentqueue" on PORT (5672) unless something answers there
#   deploy/broker.sh start NAME PORT      start node NAME@localhost with AMQP on 127.0.0.1:PORT
#   deploy/broker.sh stop NAME            stop it (rabbitmqctl stop against that node)
#   deploy/broker.sh kill NAME            kill -9 it, by its pid file (fault injection)
#   deploy/broker.sh ctl NAME ARGS...     run rabbitmqctl against it
#   deploy/broker.sh pid NAME             print its OS pid
#
# Nodes live under $INTENTQUEUE_BROKER_DIR (default /var/tmp/intentqueue-broker).
# INTENTQUEUE_BROKER_CONF names a file of extra rabbitmq.conf lines for `start`
# (a TLS listener, say).
# INTENTQUEUE_BROKER_COOKIE, when set, is written to the node's Erlang cookie
# ($dir/.erlang.cookie, mode 400) by `start` before the node starts: nodes of
# one cluster need the same cookie (deploy/cluster.sh). Unset, the node keeps
# the cookie it has, or Erlang makes a random one on its first start.
set -euo pipefail

BASE="${INTENTQUEUE_BROKER_DIR:-/var/tmp/intentqueue-broker}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RABBIT_BIN="${RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}"

usage() {
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 64
}

port_answers() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

node_env() {
    local name="$1" dir="$BASE/$1"
    export HOME="$dir"
    export RABBITMQ_NODENAME="$name@localhost"
    export RABBITMQ_CONF_ENV_FILE=/dev/null
    export RABBITMQ_CONFIG_FILE="$dir/rabbitmq"
    export RABBITMQ_MNESIA_BASE="$dir/mnesia"
    export RABBITMQ_LOG_BASE="$dir/log"
    export RABBITMQ_PID_FILE="$dir/rabbitmq.pid"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
}

ctl() {
    local name="$1"
    shift
    [[ -d "$BASE/$name" ]] || { echo "broker.sh: no node $name under $BASE" >&2; return 69; }
    node_env "$name"
    export ERL_CRASH_DUMP="$BASE/$name/log/erl_crash.dump"
    "$RABBIT_BIN/rabbitmqctl" -n "$name@localhost" "$@"
}

start() {
    local name="$1" port="$2" dir="$BASE/$1"
    [[ -x "$RABBIT_BIN/rabbitmq-server" ]] || { echo "broker.sh: rabbitmq-server is not installed (apt-get install rabbitmq-server)" >&2; exit 69; }
    if port_answers "$port"; then
        echo "broker.sh: something already listens on 127.0.0.1:$port" >&2
        exit 69
    fi
    mkdir -p "$dir/mnesia" "$dir/log"
    if [[ -n "${INTENTQUEUE_BROKER_COOKIE:-}" ]]; then
        rm -f "$dir/.erlang.cookie"
        (umask 077 && printf '%s' "$INTENTQUEUE_BROKER_COOKIE" > "$dir/.erlang.cookie")
        chmod 400 "$dir/.erlang.cookie"
    fi
    export ERL_CRASH_DUMP="$dir/log/erl_crash.dump"
    sed "s/@PORT@/$port/" "$HERE/rabbitmq.conf" > "$dir/rabbitmq.conf"
    if [[ -n "${INTENTQUEUE_BROKER_CONF:-}" ]]; then
        cat "$INTENTQUEUE_BROKER_CONF" >> "$dir/rabbitmq.conf"
    fi
    [[ -f "$dir/enabled_plugins" ]] || echo "[${INTENTQUEUE_BROKER_PLUGINS:-}]." > "$dir/enabled_plugins"
    # A pid file left by a node that died (or was killed) names a process that may be another's by now.
    rm -f "$dir/rabbitmq.pid"
    (
        # The node outlives this script: it must not keep the caller's open
        # files (a lock, or the pipe a supervisor watches for our exit).
        for fd in /proc/$BASHPID/fd/*; do
            fd="${fd##*/}"
            ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null || true
        done
        node_env "$name"
        export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
        export RABBITMQ_NODE_PORT="$port"
        export RABBITMQ_DIST_PORT="${INTENTQUEUE_DIST_PORT:-$((port + 20000))}"
        export ERL_EPMD_ADDRESS=127.0.0.1
        "$RABBIT_BIN/rabbitmq-server" -detached >"$dir/log/startup.out" 2>&1
    )
    # A time, not a count of tries: each try's rabbitmqctl may itself take seconds on a busy machine.
    local boot="${INTENTQUEUE_BROKER_BOOT_SECONDS:-150}" started=$SECONDS
    while ((SECONDS - started < boot)); do
        if port_answers "$port" && ctl "$name" await_startup >/dev/null 2>&1; then
            echo "broker.sh: node $name@localhost is up on 127.0.0.1:$port (pid $(cat "$dir/rabbitmq.pid" 2>/dev/null || echo '?'))"
            return 0
        fi
        sleep 0.5
    done
    echo "broker.sh: node $name did not start within $boot s; see $dir/log" >&2
    tail -20 "$dir/log/"*.log >&2 2>/dev/null || true
    # Not left booting behind the failure (to take the port later): stopped, or else ended by its pid (the file
    # is this start's: an earlier one was removed before it), if that pid is still this node's Erlang VM.
    ctl "$name" stop >/dev/null 2>&1 || true
    pid="$(cat "$dir/rabbitmq.pid" 2>/dev/null || true)"
    if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "beam.*$name@"; then
        kill -9 "$pid" 2>/dev/null || true
    fi
    exit 69
}

case "${1:-}" in
    ensure)
        port="${2:-5672}"
        if port_answers "$port"; then
            echo "broker.sh: a broker answers on 127.0.0.1:$port"
        else
            start intentqueue "$port"
        fi
        ;;
    start) [[ $# -eq 3 ]] || usage; start "$2" "$3" ;;
    stop)
        [[ $# -eq 2 ]] || usage
        ctl "$2" stop >/dev/null 2>&1 || true
        ;;
    kill)
        [[ $# -eq 2 ]] || usage
        pid="$(cat "$BASE/$2/rabbitmq.pid" 2>/dev/null || true)"
        [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null || true
        ;;
    pid) [[ $# -eq 2 ]] || usage; cat "$BASE/$2/rabbitmq.pid" ;;
    ctl) [[ $# -ge 3 ]] || usage; name="$2"; shift 2; ctl "$name" "$@" ;;
    *) usage ;;
esac
