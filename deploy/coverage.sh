#!/usr/bin/env bash
# Line coverage per module, from the profiles that `swift test
# --enable-code-coverage` left (the test process and every tool it started:
# they inherit LLVM_PROFILE_FILE), merged with the toolchain's llvm-profdata
# and read with its llvm-cov (Debian's, earlier on PATH, cannot read them).
# Prints one line per module of Sources/ and exits 1 when a library module is
# under the floor (70 %).
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain="$(dirname "$(readlink -f "$(command -v swift)")")"
bin="$(swift build --show-bin-path)"
# INTENTQUEUE_PROFILES: a folder holding the profiles of several test runs
# (deploy/test.sh moves each run's aside); by default the last run's.
source="${INTENTQUEUE_PROFILES:-$bin/codecov}"
mapfile -t profiles < <(find "$source" -name '*.profraw' -size +0c)
[[ ${#profiles[@]} -gt 0 ]] || { echo "coverage.sh: no profiles in $source (run swift test --enable-code-coverage first)" >&2; exit 1; }
mkdir -p "$bin/codecov"
"$toolchain/llvm-profdata" merge -sparse "${profiles[@]}" -o "$bin/codecov/merged.profdata"
objects=()
for tool in intent-worker intent-submit intent-status intent-gateway; do objects+=(-object "$bin/$tool"); done
"$toolchain/llvm-cov" export -summary-only -instr-profile "$bin/codecov/merged.profdata" \
    "$bin/IntentQueuePackageTests.xctest" "${objects[@]}" >"$bin/codecov/summary.json"
python3 - "$bin/codecov/summary.json" "$PWD/Sources/" <<'PY'
import json, sys
summary, root = sys.argv[1], sys.argv[2]
# A file built into several binaries (the test bundle and a tool) counts once, at its best reading.
best = {}
for data in json.load(open(summary))["data"]:
    for entry in data["files"]:
        name, lines = entry["filename"], entry["summary"]["lines"]
        if name.startswith(root) and (name not in best or lines["covered"] > best[name][0]):
            best[name] = (lines["covered"], lines["count"])
totals = {}
for name, (covered, count) in best.items():
    module = name[len(root):].split("/")[0]
    c, n = totals.get(module, (0, 0))
    totals[module] = (c + covered, n + count)
libraries = {"IntentKit", "IntentAMQP", "IntentStore", "IntentWorker", "IntentClient", "IntentQueue", "IntentTesting", "IntentCLI", "IntentGateway"}
print("| module | lines | covered |")
print("|---|---:|---:|")
low = []
for module in sorted(totals):
    covered, count = totals[module]
    if count == 0:
        continue
    percent = 100.0 * covered / count
    print(f"| {module} | {count} | {percent:.1f} % |")
    if module in libraries and percent < 70:
        low.append(f"{module} {percent:.1f} %")
if low:
    print("coverage.sh: library modules under 70 %: " + ", ".join(low), file=sys.stderr)
    sys.exit(1)
PY
