#!/usr/bin/env python3
"""Turns the intent-bench runs of deploy/curve.sh into curve.csv and curve.svg.

    curve-plot.py RUNS_DIR OUT_DIR

RUNS_DIR holds workers-W.json (full-speed runs) and rate-R.json (fixed-load runs),
each one `intent-bench --json` object. The SVG is drawn by hand, so that nothing
but python3 is needed: latency (p50, p99, log scale) against offered load, with the
10 ms line and where p99 crosses it, and throughput against the number of workers.
"""
import glob
import json
import math
import os
import sys


def load(runs):
    throughput, latency = [], []
    for path in sorted(glob.glob(os.path.join(runs, "workers-*.json"))):
        report = json.load(open(path))
        phase = report["endToEnd"]
        cpu = phase.get("workersAndRecorderCpuSeconds")
        throughput.append({
            "workers": int(report["settings"]["workers"]),
            "perSecond": phase["perSecond"],
            "cpuMicrosPerIntent": None if cpu is None else 1e6 * cpu / phase["intents"],
        })
    for path in glob.glob(os.path.join(runs, "rate-*.json")):
        report = json.load(open(path))
        phase = report["latency"]
        cpu = phase.get("workersAndRecorderCpuSeconds")
        latency.append({
            "offered": phase["offeredRate"],
            "achieved": phase["perSecond"],
            "p50": phase["latencyMs"]["p50"],
            "p99": phase["latencyMs"]["p99"],
            "cpuMicrosPerIntent": None if cpu is None else 1e6 * cpu / phase["intents"],
            # A p99 set by the disk: the workers' and recorder's SQLite syncs over 20 ms, and the slowest.
            "slowSyncs": phase.get("syncs", {}).get("over20ms"),
            "slowestSyncMs": phase.get("syncs", {}).get("slowestMs"),
        })
    throughput.sort(key=lambda row: row["workers"])
    latency.sort(key=lambda row: row["offered"])
    return throughput, latency


def crossing(latency, limit=10.0):
    """The offered load at which p99 first passes `limit`, interpolated between the two points around it."""
    for before, after in zip(latency, latency[1:]):
        if before["p99"] <= limit < after["p99"]:
            share = (limit - before["p99"]) / (after["p99"] - before["p99"])
            return before["offered"] + share * (after["offered"] - before["offered"])
    if latency and latency[0]["p99"] > limit:
        return latency[0]["offered"]
    return None


def write_csv(path, throughput, latency):
    def cell(value):
        return "" if value is None else f"{value:.3f}".rstrip("0").rstrip(".")
    with open(path, "w") as out:
        out.write("kind,workers,offered_per_s,achieved_per_s,p50_ms,p99_ms,cpu_us_per_intent,syncs_over_20_ms,slowest_sync_ms\n")
        for row in throughput:
            out.write(f"full_speed,{row['workers']},,{cell(row['perSecond'])},,,{cell(row['cpuMicrosPerIntent'])},,\n")
        for row in latency:
            out.write(f"fixed_load,1,{cell(row['offered'])},{cell(row['achieved'])},{cell(row['p50'])},"
                      f"{cell(row['p99'])},{cell(row['cpuMicrosPerIntent'])},{cell(row['slowSyncs'])},{cell(row['slowestSyncMs'])}\n")


def svg(throughput, latency):
    width, height = 960, 420
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>']

    def text(x, y, words, anchor="middle", size=12, weight="normal", fill="#222"):
        parts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
                     f'font-weight="{weight}" fill="{fill}">{words}</text>')

    def line(x1, y1, x2, y2, stroke="#ccc", dash=None, w=1):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" stroke-width="{w}"{extra}/>')

    # Left: latency against offered load, log scale.
    left, top, plot_w, plot_h = 70, 40, 520, 310
    text(left + plot_w / 2, 22, "Latency, submit → terminal state in the store (1 worker)", weight="bold", size=14)
    max_load = max([row["offered"] for row in latency] + [1000])
    max_load = math.ceil(max_load / 500) * 500
    low, high = 1.0, 10 ** math.ceil(math.log10(max([row["p99"] for row in latency] + [100])))

    def px(load):
        return left + plot_w * load / max_load

    def py(ms):
        ms = min(max(ms, low), high)
        return top + plot_h * (1 - (math.log10(ms) - math.log10(low)) / (math.log10(high) - math.log10(low)))

    decade = low
    while decade <= high:
        line(left, py(decade), left + plot_w, py(decade))
        text(left - 6, py(decade) + 4, f"{decade:g} ms", anchor="end")
        decade *= 10
    for load in range(0, int(max_load) + 1, 500):
        line(px(load), top, px(load), top + plot_h, stroke="#eee")
        text(px(load), top + plot_h + 16, f"{load:,}")
    text(left + plot_w / 2, top + plot_h + 36, "offered load, intents/s (open loop)")
    line(left, py(10), left + plot_w, py(10), stroke="#c0392b", dash="6,4", w=1.5)
    text(left + plot_w - 4, py(10) - 6, "10 ms", anchor="end", fill="#c0392b")
    for key, colour in (("p50", "#2471a3"), ("p99", "#d35400")):
        points = " ".join(f"{px(row['offered']):.1f},{py(row[key]):.1f}" for row in latency)
        if points:
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for row in latency:
            parts.append(f'<circle cx="{px(row["offered"]):.1f}" cy="{py(row[key]):.1f}" r="3" fill="{colour}"/>')
    text(left + 40, top + 16, "p50", fill="#2471a3", weight="bold")
    text(left + 80, top + 16, "p99", fill="#d35400", weight="bold")
    cross = crossing(latency)
    if cross is not None:
        line(px(cross), top, px(cross), top + plot_h, stroke="#c0392b", dash="2,3")
        text(px(cross) + 4, top + 32, f"p99 crosses 10 ms at ≈{cross:,.0f}/s", anchor="start", fill="#c0392b")

    # Right: throughput against workers.
    left2, plot_w2 = 680, 240
    text(left2 + plot_w2 / 2, 22, "Full speed, 20,000 intents", weight="bold", size=14)
    top_rate = max([row["perSecond"] for row in throughput] + [1])
    top_rate = math.ceil(top_rate / 1000) * 1000
    for tick in range(0, int(top_rate) + 1, 1000):
        y = top + plot_h * (1 - tick / top_rate)
        line(left2, y, left2 + plot_w2, y)
        text(left2 - 6, y + 4, f"{tick:,}", anchor="end")
    bar = plot_w2 / max(1, len(throughput)) * 0.6
    for index, row in enumerate(throughput):
        x = left2 + plot_w2 * (index + 0.5) / len(throughput) - bar / 2
        y = top + plot_h * (1 - row["perSecond"] / top_rate)
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{top + plot_h - y:.1f}" fill="#2471a3"/>')
        text(x + bar / 2, y - 6, f"{row['perSecond']:,.0f}/s")
        text(x + bar / 2, top + plot_h + 16, f"{row['workers']} worker{'s' if row['workers'] > 1 else ''}")
    text(left2 + plot_w2 / 2, top + plot_h + 36, "intents/s end to end")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: curve-plot.py RUNS_DIR OUT_DIR")
    runs, out = sys.argv[1], sys.argv[2]
    throughput, latency = load(runs)
    if not throughput and not latency:
        sys.exit(f"curve-plot.py: no intent-bench runs in {runs}")
    write_csv(os.path.join(out, "curve.csv"), throughput, latency)
    with open(os.path.join(out, "curve.svg"), "w") as handle:
        handle.write(svg(throughput, latency))
    for row in throughput:
        cpu = row["cpuMicrosPerIntent"]
        print(f"{row['workers']} worker(s): {row['perSecond']:,.0f} intents/s"
              + ("" if cpu is None else f", {cpu:.0f} µs CPU per intent (workers + recorder)"))
    for row in latency:
        cpu = row["cpuMicrosPerIntent"]
        print(f"{row['offered']:>6,.0f}/s offered: {row['achieved']:,.0f}/s achieved, p50 {row['p50']:.1f} ms, p99 {row['p99']:.1f} ms"
              + ("" if cpu is None else f", {cpu:.0f} µs CPU per intent")
              + (f", {row['slowSyncs']:.0f} SQLite syncs over 20 ms (the slowest {row['slowestSyncMs']:.1f} ms)"
                 if row["slowSyncs"] else ""))
    cross = crossing(latency)
    print("p99 crosses 10 ms at " + ("no measured load" if cross is None else f"≈{cross:,.0f} intents/s"))
    print(f"wrote {os.path.join(out, 'curve.csv')} and {os.path.join(out, 'curve.svg')}")


if __name__ == "__main__":
    main()
