#!/usr/bin/env bash
# Instructions per intent for what the status recorder writes, counted by valgrind's callgrind (repeatable,
# unlike timings on this VM), SQLite's included: each batch records the submissions of B new intents and the
# outcomes of the B before them into a real SQLite file (deploy/store-cost/main.swift). The harness is compiled
# with IntentKit's and IntentStore's sources (-O) into one module; it runs 2 and 4 rounds of 1,000 intents, and
# the difference over 2,000 intents leaves out start-up and set-up. Also prints the file writes per intent
# (strace -c, the same difference).
#   deploy/store-cost.sh [B ...]   (default: 1 5 25); STORE_COST_SOURCES=DIR counts another checkout's Sources
#   COST_IDS=random deploy/store-cost.sh   with version 4 ids instead of the version 7 ones clients make
#   STORE_COST_WRITES=alone|held deploy/store-cost.sh 1   a light load without, then with, the hold on submissions
#   STORE_COST_METRICS=1 deploy/store-cost.sh   with the state changes counted, as a recorder with --metrics-file counts them
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in valgrind strace; do
    command -v "$tool" >/dev/null || { echo "store-cost.sh: needs $tool (apt-get install $tool)" >&2; exit 69; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One module: IntentStore's `import IntentKit` only draws a warning, left out with the rest of the warnings.
sources=${STORE_COST_SOURCES:-Sources}
# The stores' VFS (C), in checkouts that have it: compiled apart, and given a module map for the Swift side.
vfs=()
if [[ -d $sources/CStoreVFS ]]; then
    cc -O2 -c -I Sources/CSQLite "$sources/CStoreVFS/vfs.c" -I "$sources/CStoreVFS/include" -o "$work/vfs.o"
    printf 'module CStoreVFS {\n    header "%s"\n    export *\n}\n' "$(realpath "$sources/CStoreVFS/include/CStoreVFS.h")" >"$work/module.modulemap"
    vfs=(-Xcc "-fmodule-map-file=$work/module.modulemap" "$work/vfs.o")
fi
swiftc -O -module-name IntentKit -package-name IntentQueue -I Sources/CSQLite "${vfs[@]}" "$sources"/IntentKit/*.swift "$sources"/IntentStore/*.swift \
    deploy/store-cost/main.swift -o "$work/store-cost" 2>"$work/warnings" || { grep -A4 "error:" "$work/warnings" >&2; exit 1; }
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/store-cost" "$1" "$2" 2>&1 | awk '/Collected/ {print $4}'; }
writes() {
    strace -f -c -e trace=pwrite64,fdatasync -o "$work/strace" "$work/store-cost" "$1" "$2" >/dev/null
    awk '$NF == "pwrite64" {print $4}' "$work/strace"
}
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1 5 25)
for b in "${sizes[@]}"; do
    two=$(count 2 "$b")
    four=$(count 4 "$b")
    w2=$(writes 2 "$b")
    w4=$(writes 4 "$b")
    printf 'batch %3d: %8d instructions, %5.1f pwrites per intent\n' "$b" $(((four - two) / 2000)) "$(awk "BEGIN {print ($w4 - $w2) / 2000}")"
done
