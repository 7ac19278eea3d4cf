#!/usr/bin/env bash
# Builds IntentQueue's release binaries as the quickstart and the image ship them:
#
#   deploy/build-release.sh [swift build options…]    (--product NAME, --show-bin-path, --package-path DIR, …)
#
# The Swift runtime is linked in (--static-swift-stdlib), and so is the C++ runtime under it when its static
# archive is installed (libstdc++-12-dev, which the Swift toolchain needs anyway): a tool then starts without
# loading libstdc++, whose symbols the dynamic loader would look up at every start, about 2 ms of a 7 ms lookup
# (see Performance in the documentation). Without the archive the tools link libstdc++ as a shared library.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
flags=(-c release --static-swift-stdlib)
archive=""
for compiler in clang cc c++; do
    command -v "$compiler" >/dev/null || continue
    archive="$("$compiler" -print-file-name=libstdc++.a 2>/dev/null || true)"
    [[ "$archive" == /* && -f "$archive" ]] && break
    archive=""
done
if [[ -n "$archive" ]]; then
    # A folder holding only the archive, searched before the compiler's own folder, which holds the shared library too.
    folder="$ROOT/.build/static-libstdc++"
    mkdir -p "$folder"
    ln -sfn "$archive" "$folder/libstdc++.a"
    flags+=(-Xlinker "-L$folder")
fi
cd "$ROOT"
exec swift build "${flags[@]}" "$@"
