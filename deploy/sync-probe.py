#!/usr/bin/env python3
"""Times the disk's syncs on its own, to set beside intent-bench's: writes 4 KiB into a file and fdatasyncs it, every
INTERVAL seconds for SECONDS seconds, and prints each sync over 15 ms (with when it happened) and a summary.

    deploy/sync-probe.py [--seconds 60] [--interval 0.005] [--file PATH]

Run it beside intent-bench (or deploy/curve.sh): a slow sync that both see at the same moment is the disk's, not
IntentQueue's. The file (by default in the system's temporary folder) is removed at the end.
"""
import argparse
import os
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long to probe (default 60)")
    parser.add_argument("--interval", type=float, default=0.005, help="seconds between two syncs (default 0.005)")
    parser.add_argument("--file", help="the file to write and sync (default: a new one in the temporary folder)")
    args = parser.parse_args()
    if args.seconds <= 0 or args.interval < 0:
        parser.error("--seconds must be positive and --interval not negative")
    if args.file:
        path = args.file
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    else:
        descriptor, path = tempfile.mkstemp(prefix="sync-probe-")
    block = b"x" * 4096
    timings = []
    start = time.monotonic()
    try:
        while time.monotonic() - start < args.seconds:
            os.pwrite(descriptor, block, (len(timings) % 256) * 4096)
            before = time.monotonic()
            os.fdatasync(descriptor)
            took = (time.monotonic() - before) * 1000
            timings.append(took)
            if took > 15:
                print(f"slow sync: {took:.1f} ms, {before - start:.1f} s in ({time.strftime('%H:%M:%S')})", flush=True)
            time.sleep(args.interval)
    except KeyboardInterrupt:
        pass
    finally:
        os.close(descriptor)
        os.unlink(path)
    if not timings:
        sys.exit("sync-probe: no sync was made")
    timings.sort()
    def at(share):
        return timings[min(len(timings) - 1, int(len(timings) * share))]
    print(f"{len(timings)} syncs: p50 {at(0.5):.2f} ms, p99 {at(0.99):.2f} ms, p99.9 {at(0.999):.2f} ms, "
          f"max {timings[-1]:.1f} ms; {sum(1 for t in timings if t > 20)} over 20 ms")


if __name__ == "__main__":
    main()
