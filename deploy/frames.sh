#!/usr/bin/env bash
# AMQP frames per intent on the broker's connections: IntentQueue end to end
# beside the Swift and C ceilings of the same run. Captures loopback traffic to
# port 5672 with tcpdump while deploy/ceiling.sh runs intent-bench with the
# given options, then reads the frames with deploy/frames.py, phase by phase:
# the ceiling (N intents), the C ceiling (N), with a latency phase the C pattern
# paced at --rate (M), and IntentQueue's end to end and latency phases together
# (N + M: the same workers and recorder serve both, so a small N leaves the
# latency phase's figures).
#
#   deploy/frames.sh [--intents N] [--latency-intents M] [--rate R] [other intent-bench options]
#   deploy/frames.sh --intents 500 --latency-intents 10000 --rate 1000    # frames at a fixed load
#
# Needs tcpdump (and the right to capture on lo: root or CAP_NET_RAW), python3 and
# what deploy/ceiling.sh needs. The capture is /var/tmp/intentqueue-frames.pcap,
# removed at the end unless --keep is given.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTENTS=20000 LATENCY=5000 KEEP=no
options=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --intents) INTENTS="$2"; options+=("$1" "$2"); shift 2 ;;
        --latency-intents) LATENCY="$2"; options+=("$1" "$2"); shift 2 ;;
        --keep) KEEP=yes; shift ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) options+=("$1"); shift ;;
    esac
done
[[ "$INTENTS" =~ ^[0-9]+$ && "$LATENCY" =~ ^[0-9]+$ && "$INTENTS" -gt 0 ]] ||
    { echo "frames.sh: --intents and --latency-intents take whole numbers (--intents at least 1)" >&2; exit 64; }
for tool in tcpdump python3; do
    command -v "$tool" >/dev/null || { echo "frames.sh: $tool is not installed" >&2; exit 69; }
done
CAPTURE=/var/tmp/intentqueue-frames.pcap
LOG=/var/tmp/intentqueue-frames.tcpdump
rm -f "$CAPTURE" "$LOG"
# Each packet handed over and written as it comes (--immediate-mode, -U), so that stopping the capture
# loses none still waiting in a buffer.
tcpdump -i lo -s 0 -B 262144 --immediate-mode -U -w "$CAPTURE" 'tcp port 5672' 2>"$LOG" &
capturing=$!
stop_capture() {
    kill -0 "$capturing" 2>/dev/null || return 0
    # Once the file has stopped growing for a second (ten at most), the run's last packets are in it.
    local size=-1 now
    for _ in $(seq 10); do
        now=$(stat -c %s "$CAPTURE" 2>/dev/null || echo 0)
        [[ $now == "$size" ]] && break
        size=$now
        sleep 1
    done
    kill -INT "$capturing" 2>/dev/null || true
    wait "$capturing" 2>/dev/null || true
}
trap 'stop_capture; rm -f "$LOG"; [[ $KEEP == yes ]] || rm -f "$CAPTURE"' EXIT
# tcpdump says "listening" once the capture is open.
for _ in $(seq 100); do
    grep -q listening "$LOG" 2>/dev/null && break
    kill -0 "$capturing" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
    sleep 0.1
done
"$HERE/ceiling.sh" "${options[@]}"
stop_capture
grep -E "captured|dropped" "$LOG" >&2 || true
counts="$INTENTS,$INTENTS"
[[ "$LATENCY" -gt 0 ]] && counts+=",$LATENCY"
counts+=",$((INTENTS + LATENCY))"
python3 "$HERE/frames.py" "$CAPTURE" "$counts"
