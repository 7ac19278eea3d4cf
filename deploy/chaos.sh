#!/usr/bin/env bash
# IntentQueue's fault-injection suite: nothing lost, nothing done twice.
#
#   deploy/chaos.sh [--intents N] [--producers P] [--workers W] [--broker-restarts K] [--kill-every MIN-MAX] [--port PORT]
#                   [--schedule-over S] [--keep]
#
# On a RabbitMQ node of its own (deploy/broker.sh, node "iqchaos"), it submits N
# SendMessage intents from P producers (each resubmits an unconfirmed intent with
# the same id) to W workers and a recorder, all restarted whenever they die. One
# intent in five asks a question ("Jeff": which one?), which an answerer answers
# as soon as the store shows it; one in seven is canceled by its producer right
# after it was confirmed, whatever state it is in. Meanwhile:
#   * workers are killed with kill -9 every MIN-MAX seconds, and kill themselves at
#     the injection points (after receive, after the handler's commit, after the
#     status publish, before the ack: INTENTQUEUE_FAULT);
#   * the broker's connections are closed (rabbitmqctl close_all_connections);
#   * the broker is restarted K times (stop_app/start_app, then kill -9 and a cold start);
#   * the broker is frozen (SIGSTOP) for three heartbeats, then thawed.
# Then it drains and checks, from the producers' own logs and the databases:
#   lost (confirmed but never terminal), duplicated effects (a Message row twice),
#   contradicted (a stored outcome the app's rows disagree with: success without a
#   Message row, or canceled/failure with one), terminal changed (an outcome that
#   later disagreed), queues left non-empty, and PRAGMA integrity_check of both
#   SQLite files. Exit 0 when all hold.
# With --schedule-over S, every intent is submitted scheduled (--at), the due times
# spread evenly over S seconds once every submission had time to be confirmed, and the faults
# happen while they come due; the run also prints how late each started after its
# due time (p50, p99, max) and how many were due while the broker was down.
# A run that fails keeps its folder of logs and databases (it says where); one that
# passes removes it, unless --keep.
#
# Short run (part of deploy/test.sh):  deploy/chaos.sh --intents 1000
# Long run:                             deploy/chaos.sh --intents 20000 --broker-restarts 3 --kill-every 2-5
# Scheduled:                            deploy/chaos.sh --intents 1000 --schedule-over 60
set -uo pipefail
cd "$(dirname "$0")/.."

INTENTS=1000
PRODUCERS=4
WORKERS=2
RESTARTS=1
KILL_EVERY="2-5"
PORT=5693
HEARTBEAT=2
SCHEDULE=0
KEEP=0
usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
while (($#)); do
    case "$1" in
        --intents) INTENTS="$2"; shift 2 ;;
        --producers) PRODUCERS="$2"; shift 2 ;;
        --workers) WORKERS="$2"; shift 2 ;;
        --broker-restarts) RESTARTS="$2"; shift 2 ;;
        --kill-every) KILL_EVERY="$2"; shift 2 ;;
        --port) PORT="$2"; shift 2 ;;
        --schedule-over) SCHEDULE="$2"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage ;;
        *) echo "chaos.sh: unknown option $1" >&2; usage ;;
    esac
done
[[ "$INTENTS" =~ ^[0-9]+$ && "$PRODUCERS" =~ ^[1-9][0-9]*$ && "$WORKERS" =~ ^[1-9][0-9]*$ && "$RESTARTS" =~ ^[0-9]+$ && "$KILL_EVERY" =~ ^[0-9]+-[0-9]+$ && "$SCHEDULE" =~ ^[0-9]+$ ]] || usage
KILL_MIN="${KILL_EVERY%-*}"
KILL_MAX="${KILL_EVERY#*-}"

NODE=iqchaos
# One run at a time: a second would stop the first one's broker and share its queues.
exec 9>"${TMPDIR:-/tmp}/intentqueue-chaos.lock"
flock -n 9 || { echo "chaos.sh: another chaos run is in progress" >&2; exit 69; }
BIN="${INTENTQUEUE_BIN_DIR:-$(swift build --show-bin-path 2>/dev/null)}"
for tool in intent-worker intent-submit intent-status; do
    [[ -x "$BIN/$tool" ]] || { echo "chaos.sh: $BIN/$tool is missing; run swift build first" >&2; exit 69; }
done
command -v sqlite3 >/dev/null || { echo "chaos.sh: sqlite3 is missing (deploy/install.sh installs it)" >&2; exit 69; }

RUN="$(mktemp -d "${TMPDIR:-/tmp}/intentqueue-chaos.XXXXXX")"
export INTENT_BROKER_URL="amqp://guest:guest@127.0.0.1:$PORT/%2f"
export INTENT_STATUS_DB="$RUN/status.sqlite"
export HAIRDRESSERS_DB="$RUN/hairdressers.sqlite"
STOP="$RUN/stop"
log() { echo "chaos $(date +%H:%M:%S) $*"; }

deploy/broker.sh stop "$NODE" >/dev/null 2>&1
rm -rf "${INTENTQUEUE_BROKER_DIR:-/var/tmp/intentqueue-broker}/$NODE"
deploy/broker.sh start "$NODE" "$PORT" >/dev/null || exit 69
touch "$RUN/outages.log" "$RUN/confirm-times.log"
log "broker $NODE on 127.0.0.1:$PORT; run folder $RUN"

PIDS=()
cleanup() {
    touch "$STOP"
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    # The supervisors' children too: a worker left behind would reconnect to the next run's broker.
    for f in "$RUN"/*.pid; do [[ -e "$f" ]] && kill -9 "$(cat "$f")" 2>/dev/null; done
    wait 2>/dev/null
    deploy/broker.sh stop "$NODE" >/dev/null 2>&1
    # A run that passed leaves nothing behind, once its processes are gone (unless --keep).
    if ((PASSED && !KEEP)); then rm -rf "$RUN"; fi
}
PASSED=0
trap cleanup EXIT

# A supervisor restarts its process whenever it dies, as systemd's Restart=always would.
supervise() {
    local name="$1"
    shift
    local generation=0
    while [[ ! -e "$STOP" ]]; do
        "$@" 2>>"$RUN/$name.log" &
        local child=$!
        echo "$child" >"$RUN/$name.pid"
        echo "$child" >>"$RUN/$name.starts"
        wait "$child" 2>/dev/null
        [[ -e "$STOP" ]] || sleep 0.2
    done
}

supervise recorder "$BIN/intent-worker" --recorder-only --heartbeat "$HEARTBEAT" &
PIDS+=($!)
FAULTS="afterReceive:0.002,afterHandle:0.002,afterStatusPublish:0.002,beforeAck:0.002"
for w in $(seq 1 "$WORKERS"); do
    INTENTQUEUE_FAULT="$FAULTS" supervise "worker-$w" "$BIN/intent-worker" --concurrency 8 --heartbeat "$HEARTBEAT" --grace 5 &
    PIDS+=($!)
done
for _ in $(seq 1 100); do
    grep -q " connected " "$RUN/worker-1.log" 2>/dev/null && break
    sleep 0.2
done

# Producers: the log records each id once the broker confirmed it. Every fifth
# intent asks which Jeff; every seventh is canceled right away (the cancel is
# sent again until the tools could send it: exit 0 canceled, 1 already ended,
# 3 requested but not decided yet).
# Scheduled runs: intent i is due at DUE_START + SCHEDULE * i / INTENTS, late enough
# for every submission to be confirmed first (7-8 a second here with a debug build, the
# killer at work and the workers keeping each early copy; the run counts any that were not).
DUE_START=$(($(date +%s) + 20 + INTENTS / 6))
due_time() { python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp($DUE_START + $SCHEDULE * $1 / $INTENTS, datetime.timezone.utc).isoformat(timespec='milliseconds').replace('+00:00', 'Z'))"; }
producer() {
    local p="$1" from="$2" to="$3"
    for ((i = from; i < to; i++)); do
        local id="chaos-$p-$i" recipient=Alice when=()
        ((i % 5 == 0)) && recipient=Jeff
        ((SCHEDULE > 0)) && when=(--at "$(due_time "$i")")
        until "$BIN/intent-submit" SendMessage "recipients=$recipient" "content=chaos $i" --id "$id" "${when[@]}" >/dev/null 2>>"$RUN/producer-$p.err"; do
            [[ -e "$STOP" ]] && return
            sleep 0.5
        done
        echo "$id" >>"$RUN/confirmed-$p.log"
        echo "$id $(date +%s.%N)" >>"$RUN/confirm-times.log"
        if ((i % 7 == 0)); then
            local tries=0
            while ((tries++ < 20)) && [[ ! -e "$STOP" ]]; do
                "$BIN/intent-status" cancel "$id" --timeout 1 >/dev/null 2>>"$RUN/producer-$p.err"
                case $? in 0 | 1 | 3) echo "$id" >>"$RUN/cancels.log"; break ;; esac
                sleep 0.2
            done
        fi
    done
    touch "$RUN/producer-$p.done"
}

# The answerer: every question in the store is answered, until the run stops.
answerer() {
    while [[ ! -e "$STOP" ]]; do
        for id in $(sqlite3 -cmd ".timeout 2000" "file:$INTENT_STATUS_DB?mode=ro" \
            "SELECT id FROM intent_status WHERE id LIKE 'chaos-%' AND state = 'needsInput'" 2>/dev/null); do
            "$BIN/intent-submit" --answer "$id" "recipients=Jeff Baker" >/dev/null 2>>"$RUN/answerer.err" && echo "$id" >>"$RUN/answers.log"
        done
        sleep 0.5
    done
}
answerer &
PIDS+=($!)
per=$(((INTENTS + PRODUCERS - 1) / PRODUCERS))
for p in $(seq 1 "$PRODUCERS"); do
    from=$(((p - 1) * per))
    to=$((p * per < INTENTS ? p * per : INTENTS))
    producer "$p" "$from" "$to" &
    PIDS+=($!)
done
log "$PRODUCERS producers submitting $INTENTS intents to $WORKERS workers"

confirmed_count() { cat "$RUN"/confirmed-*.log 2>/dev/null | wc -l; }
producers_done() { [[ $(ls "$RUN"/producer-*.done 2>/dev/null | wc -l) -eq $PRODUCERS ]]; }
wait_for_confirmed() {
    local target="$1"
    while (($(confirmed_count) < target)) && ! producers_done; do sleep 0.2; done
}
# Where the faults happen: after a share of the submissions, or in a scheduled run,
# once that share of the due window has passed.
fault_point() {
    local numerator="$1" denominator="$2"
    if ((SCHEDULE > 0)); then
        local at=$((DUE_START + SCHEDULE * numerator / denominator))
        while (($(date +%s) < at)); do sleep 0.2; done
    else
        wait_for_confirmed $((INTENTS * numerator / denominator))
    fi
}
killing() {
    if ((SCHEDULE > 0)); then (($(date +%s) < DUE_START + SCHEDULE)); else ! producers_done; fi
}

# The killer: kill -9 a random worker every KILL_MIN-KILL_MAX seconds.
killer() {
    while [[ ! -e "$STOP" ]] && killing; do
        sleep $((KILL_MIN + RANDOM % (KILL_MAX - KILL_MIN + 1)))
        local w=$((1 + RANDOM % WORKERS))
        local pid
        pid="$(cat "$RUN/worker-$w.pid" 2>/dev/null)"
        [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null && echo kill >>"$RUN/kills.log"
    done
}
killer &
PIDS+=($!)

# Broker faults, spread over the run.
fault_point 1 5
log "closing every broker connection"
deploy/broker.sh ctl "$NODE" close_all_connections "chaos" >/dev/null 2>&1
for r in $(seq 1 "$RESTARTS"); do
    fault_point $((r + 1)) $((RESTARTS + 3))
    down=$(date +%s.%N)
    if ((r % 2 == 1)); then
        log "broker restart $r: stop_app / start_app"
        deploy/broker.sh ctl "$NODE" stop_app >/dev/null 2>&1
        sleep 2
        deploy/broker.sh ctl "$NODE" start_app >/dev/null 2>&1
    else
        log "broker restart $r: kill -9 and a cold start"
        deploy/broker.sh kill "$NODE"
        sleep 1
        deploy/broker.sh start "$NODE" "$PORT" >/dev/null
    fi
    echo "$down $(date +%s.%N)" >>"$RUN/outages.log"
done
fault_point 4 5
pid="$(deploy/broker.sh pid "$NODE" 2>/dev/null)"
if [[ -n "$pid" ]]; then
    log "freezing the broker (SIGSTOP) for $((3 * HEARTBEAT)) s"
    down=$(date +%s.%N)
    kill -STOP "$pid"
    sleep $((3 * HEARTBEAT))
    kill -CONT "$pid"
    echo "$down $(date +%s.%N)" >>"$RUN/outages.log"
fi

while ! producers_done; do sleep 0.5; done
CONFIRMED=$(confirmed_count)
log "$CONFIRMED intents confirmed; draining"

terminal_count() {
    sqlite3 -cmd ".timeout 2000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT count(*) FROM intent_status WHERE id LIKE 'chaos-%' AND rank = 3" 2>/dev/null || echo 0
}
deadline=$((SECONDS + 300))
while (($(terminal_count) < CONFIRMED && SECONDS < deadline)); do sleep 1; done
# Then until the queues are empty: resubmitted duplicates and the last status
# events still have to pass through the workers and the recorder.
queues_left() {
    local listed
    # A broker too busy to answer has not been seen to be drained.
    listed=$(deploy/broker.sh ctl "$NODE" list_queues -q name messages 2>/dev/null) || { echo "unknown"; return; }
    awk '$1 != "name" && $1 != "intents.dead" && $1 != "intents.cancellations" && $2 != 0 {print $1 "=" $2}' <<<"$listed" | paste -sd, -
}
while [[ -n "$(queues_left)" && SECONDS -lt deadline ]]; do sleep 1; done
sleep 1
touch "$STOP"
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
for f in "$RUN"/*.pid; do kill -TERM "$(cat "$f")" 2>/dev/null; done
wait 2>/dev/null
# The workers and the recorder are grandchildren: wait until each has exited
# (the recorder's last commit and checkpoint) before reading the files.
for f in "$RUN"/*.pid; do
    pid="$(cat "$f")"
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
done

# The checks.
cat "$RUN"/confirmed-*.log | sort -u >"$RUN/confirmed.txt"
sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT id FROM intent_status WHERE rank = 3" | sort -u >"$RUN/terminal.txt"
LOST=$(comm -23 "$RUN/confirmed.txt" "$RUN/terminal.txt" | wc -l)
DUPLICATED=$(sqlite3 -cmd ".timeout 5000" "file:$HAIRDRESSERS_DB?mode=ro" "SELECT count(*) FROM (SELECT intent_id FROM message GROUP BY intent_id HAVING count(*) > 1)")
CONTRADICTED=$(sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "ATTACH 'file:$HAIRDRESSERS_DB?mode=ro' AS app;
    SELECT count(*) FROM intent_status s WHERE s.id LIKE 'chaos-%' AND s.rank = 3
      AND (s.state = 'success') != EXISTS (SELECT 1 FROM app.message m WHERE m.intent_id = s.id)")
CANCELED=$(sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT count(*) FROM intent_status WHERE id LIKE 'chaos-%' AND state = 'canceled'")
CANCELS=$(sort -u "$RUN/cancels.log" 2>/dev/null | wc -l)
ANSWERS=$(sort -u "$RUN/answers.log" 2>/dev/null | wc -l)
CHANGED=$(sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT count(*) FROM status_conflict")
SUCCEEDED=$(sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT count(*) FROM intent_status WHERE id LIKE 'chaos-%' AND state = 'success'")
FAILED=$(sqlite3 -cmd ".timeout 5000" "file:$INTENT_STATUS_DB?mode=ro" "SELECT response_code || ' ' || count(*) FROM intent_status WHERE id LIKE 'chaos-%' AND state = 'failure' GROUP BY response_code" | paste -sd, -)
INTEGRITY_STATUS=$(sqlite3 -cmd ".timeout 5000" "$INTENT_STATUS_DB" "PRAGMA integrity_check")
INTEGRITY_APP=$(sqlite3 -cmd ".timeout 5000" "$HAIRDRESSERS_DB" "PRAGMA integrity_check")
QUEUES=$(queues_left)
for _ in 1 2 3 4 5; do [[ "$QUEUES" == unknown ]] || break; sleep 2; QUEUES=$(queues_left); done
KILLS=$(cat "$RUN/kills.log" 2>/dev/null | wc -l)
RESTARTED=$(($(cat "$RUN"/worker-*.starts 2>/dev/null | wc -l) - WORKERS))

echo
echo "IntentQueue chaos run: $INTENTS intents, $PRODUCERS producers, $WORKERS workers"
echo "  faults: $KILLS kill -9 of workers by the killer, $((RESTARTED - KILLS)) deaths at injection points ($RESTARTED worker restarts),"
echo "          1 close_all_connections, $RESTARTS broker restarts, 1 freeze of $((3 * HEARTBEAT)) s"
echo "  conversation: $ANSWERS questions answered, $CANCELS cancels sent"
echo "  confirmed $CONFIRMED, success $SUCCEEDED, canceled $CANCELED, failure ${FAILED:-none}"
echo "  lost $LOST, duplicated effects $DUPLICATED, contradicted $CONTRADICTED, terminal changed $CHANGED"
echo "  queues not empty: ${QUEUES:-none}; integrity: status $INTEGRITY_STATUS, app $INTEGRITY_APP"
if ((SCHEDULE > 0)); then
    # How late each started after its due time (started_at: the worker's clock; due_at: the producers'; one machine).
    # An intent whose start was never recorded (its events were lost, and a later run found it decided) counts
    # from its Message row, which is later than its start. Those confirmed only after their due time (the
    # producers were slower than the schedule allowed) are counted apart: they were never scheduled ahead.
    sqlite3 -cmd ".timeout 5000" -cmd "ATTACH 'file:$HAIRDRESSERS_DB?mode=ro' AS app" "file:$INTENT_STATUS_DB?mode=ro" \
        "SELECT id, coalesce(started_at, (SELECT min(created_at) FROM app.message m WHERE m.intent_id = s.id)) - due_at, due_at,
                started_at IS NULL FROM intent_status s
         WHERE id LIKE 'chaos-%' AND due_at IS NOT NULL
           AND coalesce(started_at, (SELECT min(created_at) FROM app.message m WHERE m.intent_id = s.id)) IS NOT NULL" |
        python3 -c '
import sys
outages = [tuple(map(float, line.split())) for line in open(sys.argv[1])]
confirmed = {}
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) == 2: confirmed[parts[0]] = float(parts[1])
rows, behind, unrecorded = [], 0, 0
for line in sys.stdin:
    if not line.strip(): continue
    id, lateness, due, unknown = line.strip().split("|")
    if confirmed.get(id, 0) > float(due):
        behind += 1
        continue
    unrecorded += int(unknown)
    rows.append((float(lateness), float(due)))
late = sorted(r[0] for r in rows)
def q(p): return late[min(len(late) - 1, int(p * len(late)))] if late else float("nan")
during = sum(1 for l, due in rows if any(a - 1 <= due <= b + 1 for a, b in outages))
over = sum(1 for l in late if l > 1)
early = sum(1 for l in late if l < 0)
print(f"  scheduled: {len(late)} started that were confirmed before their time ({behind} more confirmed after it; {unrecorded} timed by their Message row);")
print(f"             late by p50 {q(0.5) * 1000:.0f} ms, p99 {q(0.99) * 1000:.0f} ms, max {late[-1] * 1000 if late else 0:.0f} ms;")
print(f"             {over} more than 1 s late ({during} due within 1 s of a broker outage or freeze), {early} started before their time")
clear = sorted(l for l, due in rows if not any(a - 1 <= due <= b + 1 for a, b in outages))
if clear:
    p99 = clear[min(len(clear) - 1, int(0.99 * len(clear)))]
    print(f"             due away from the outages ({len(clear)}): p99 {p99 * 1000:.0f} ms, max {clear[-1] * 1000:.0f} ms, {sum(1 for l in clear if l > 1)} more than 1 s late")
' "$RUN/outages.log" "$RUN/confirm-times.log"
fi
if [[ $LOST -eq 0 && $DUPLICATED -eq 0 && $CONTRADICTED -eq 0 && $CHANGED -eq 0 && -z "$QUEUES" && "$INTEGRITY_STATUS" == ok && "$INTEGRITY_APP" == ok && $CONFIRMED -eq $INTENTS ]]; then
    PASSED=1
    if ((KEEP)); then echo "  logs: $RUN"; fi
    echo "1 passed, 0 failed"
    exit 0
fi
echo "  logs: $RUN"
echo "0 passed, 1 failed"
exit 1
