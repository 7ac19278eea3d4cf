#!/usr/bin/env bash
# Fuzzes IntentQueue's wire decoders (the intent envelope, the status event and
# the JSON parser under them) with libFuzzer, under AddressSanitizer (which
# checks for leaks at the end):
#
#   deploy/fuzz.sh [--seconds N] [--jobs J]
#
# Builds .build/fuzz/wire-fuzzer from the IntentKit sources and Fuzz/WireFuzzer.swift
# with the toolchain's swiftc, then runs it for N seconds (default 600) from the
# seeds in Fuzz/corpus, keeping what it finds in .build/fuzz/corpus. A crash, a
# hang (an input taking over 10 s) or a leak stops it with exit 1 and leaves the
# input in .build/fuzz/ (crash-*, timeout-*, leak-*); add such an input to
# Fuzz/corpus once fixed, so the unit tests replay it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
jobs=1
while (($#)); do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 64 ;;
    esac
done
[[ "$seconds" =~ ^[0-9]+$ && "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds and --jobs take whole numbers" >&2; exit 64; }

swiftc="$(dirname "$(command -v swift)")/swiftc"
mkdir -p .build/fuzz/corpus
"$swiftc" -sanitize=fuzzer,address -parse-as-library -swift-version 6 -O -g -module-name IntentKitFuzz \
    Sources/IntentKit/*.swift Fuzz/WireFuzzer.swift -o .build/fuzz/wire-fuzzer 2>&1 | { grep -v "Cannot export local symbol" || true; }
echo "fuzz.sh: running for $seconds s from $(ls Fuzz/corpus | wc -l) seeds"
cd .build/fuzz
./wire-fuzzer -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -jobs="$jobs" -workers="$jobs" corpus ../../Fuzz/corpus 2>&1 | tee fuzz.log | grep -E "^#[0-9]+ +(DONE|pulse)|ERROR|SUMMARY|stat::|Done" || true
if grep -qE "ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|SUMMARY: " fuzz.log; then
    echo "fuzz.sh: the fuzzer found a problem (.build/fuzz/fuzz.log)" >&2
    exit 1
fi
echo "fuzz.sh: no crash, hang or leak in $seconds s ($(ls corpus | wc -l) inputs in the corpus)"
