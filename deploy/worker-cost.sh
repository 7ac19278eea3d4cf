#!/usr/bin/env bash
# Instructions per intent through the worker, counted by valgrind's callgrind (repeatable, unlike timings on this
# VM): SendMessage intents through the real WorkerService on an in-memory transport, with the Hairdressers database
# in a real SQLite file (deploy/worker-cost/main.swift), SQLite and the Swift runtime included, the broker's I/O and
# the recorder not (deploy/store-cost.sh counts the recorder's writes). It runs 2,000 and 4,000 intents, and the
# difference over 2,000, less the harness's own share (making the envelopes), leaves out start-up and set-up.
# Twice: every delivery handed in at once (full speed: the database queue's batches are large), then one delivery
# at a time, the next once the last is acked (a light load, where every batch holds one write).
# The harness is linked with a release build's objects:
#   swift build -c release --static-swift-stdlib && deploy/worker-cost.sh
#   WORKER_COST_CHECKOUT=DIR deploy/worker-cost.sh    counts another checkout's release build
#   COST_IDS=random deploy/worker-cost.sh             with version 4 ids instead of the version 7 ones clients make
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "worker-cost.sh: needs valgrind (apt-get install valgrind)" >&2; exit 69; }
checkout=${WORKER_COST_CHECKOUT:-$PWD}
release=$checkout/.build/release
[[ -d $release/IntentWorker.build && -d $release/Hairdressers.build ]] ||
    { echo "worker-cost.sh: no release build in $checkout (swift build -c release --static-swift-stdlib)" >&2; exit 66; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objects=()
for target in IntentKit IntentStore IntentAMQP IntentWorker IntentCLI IntentClient IntentQueue Hairdressers CRabbitMQ; do
    objects+=("$release/$target.build"/*.o)
done
# The stores' VFS, in checkouts that have it.
vfs=()
if [[ -d $release/CStoreVFS.build ]]; then
    objects+=("$release/CStoreVFS.build"/*.o)
    vfs=(-Xcc "-fmodule-map-file=$release/CStoreVFS.build/module.modulemap")
fi
swiftc -O -static-stdlib -module-name WorkerCost -I "$release/Modules" -I "$checkout/Sources/CSQLite" "${vfs[@]}" \
    -I "$checkout/Sources/CRabbitMQ/include" -Xcc "-fmodule-map-file=$release/CRabbitMQ.build/module.modulemap" \
    deploy/worker-cost/main.swift "${objects[@]}" -lsqlite3 -ldl -o "$work/worker-cost" 2>"$work/warnings" ||
    { grep -A4 "error:" "$work/warnings" >&2; exit 1; }
# Valgrind 3.19 cannot read some of the toolchain's DWARF 5 and gives up; the counts need no debug information.
strip --strip-debug "$work/worker-cost"
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/worker-cost" "$1" "$2" 2>&1 | awk '/Collected/ {print $4}'; }
made2=$(count 2000 none)
made4=$(count 4000 none)
printf 'the harness'"'"'s own share, taken away: %d instructions per intent\n' $(((made4 - made2) / 2000))
for mode in all one; do
    run2=$(count 2000 $mode)
    run4=$(count 4000 $mode)
    case $mode in
        all) what="every delivery at once (full speed)" ;;
        one) what="one delivery at a time (a light load)" ;;
    esac
    printf 'worker, %s: %d instructions per intent\n' "$what" $(((run4 - run2 - made4 + made2) / 2000))
done
