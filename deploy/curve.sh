#!/usr/bin/env bash
# The cost curve: end-to-end throughput with 1, 2 and 4 workers, and latency
# (submit → terminal state in the status store, p50/p99) for offered loads from
# 100 intents/s up to saturation, each point one intent-bench run against the
# local broker. Writes the points as CSV and draws them as SVG (into the
# Performance article's catalog too, unless --out names another folder).
#
#   deploy/curve.sh [--bin .build/release] [--out docs/performance] [--seconds 6] [--rates "100 200 …"]
#
# A load counts as saturated when the achieved rate falls under 90 % of the
# offered one or p99 passes one second; the sweep stops after the first such
# point. Needs python3; the broker is the one deploy/broker.sh ensure 5672 starts.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/../.build/release" OUT="$HERE/../docs/performance" SECONDS_PER_POINT=6
RATES="100 250 500 750 1000 1250 1500 1750 2000 2250 2500 2750 3000 3500 4000"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bin) BIN="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --seconds) SECONDS_PER_POINT="$2"; shift 2 ;;
        --rates) RATES="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "curve.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
[[ -x "$BIN/intent-bench" ]] || { echo "curve.sh: no intent-bench in $BIN (swift build -c release)" >&2; exit 69; }
command -v python3 >/dev/null || { echo "curve.sh: python3 is not installed" >&2; exit 69; }
"$HERE/broker.sh" ensure 5672 >/dev/null
mkdir -p "$OUT"
RUNS="$(mktemp -d)"
trap 'rm -rf "$RUNS"' EXIT

echo "curve.sh: throughput with 1, 2 and 4 workers (20,000 intents each)…" >&2
for workers in 1 2 4; do
    "$BIN/intent-bench" --skip-ceiling --workers "$workers" --intents 20000 --latency-intents 0 --json \
        >"$RUNS/workers-$workers.json" 2>>"$RUNS/bench.log"
done

echo "curve.sh: latency by offered load ($SECONDS_PER_POINT s per point)…" >&2
for rate in $RATES; do
    "$BIN/intent-bench" --skip-ceiling --intents 500 --rate "$rate" --latency-intents $((rate * SECONDS_PER_POINT)) --json \
        >"$RUNS/rate-$rate.json" 2>>"$RUNS/bench.log" || { echo "curve.sh: the run at $rate/s failed (see below)" >&2; tail -5 "$RUNS/bench.log" >&2; break; }
    saturated="$(python3 - "$RUNS/rate-$rate.json" <<'PY'
import json, sys
latency = json.load(open(sys.argv[1]))["latency"]
print("yes" if latency["perSecond"] < 0.9 * latency["offeredRate"] or latency["latencyMs"]["p99"] > 1000 else "no")
PY
)"
    echo "curve.sh:   $rate/s done" >&2
    [[ "$saturated" == yes ]] && break
done

python3 "$HERE/curve-plot.py" "$RUNS" "$OUT"
# The Performance article shows the same picture: the one drawn into the repository's docs/performance, not a
# curve drawn elsewhere with --out (another build's, for comparison).
if [[ "$(cd -- "$OUT" >/dev/null && pwd -P)" == "$(cd -- "$HERE/../docs/performance" >/dev/null && pwd -P)" ]]; then
    cp "$OUT/curve.svg" "$HERE/../Sources/IntentKit/IntentKit.docc/curve.svg"
fi
