"""Another process on the cores: spins on CPU ``--cpu`` until killed, and writes its own CPU
time (the kernel's count for this process, CLOCK_PROCESS_CPUTIME_ID) every 10 ms to ``--log``
as "monotonic_ns cpu_ns" lines, so a test can read its CPU time over any span."""

import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--cpu", type=int, required=True)
parser.add_argument("--log", required=True)
args = parser.parse_args()
os.sched_setaffinity(0, {args.cpu})
with open(args.log, "w", buffering=1) as log:
    next_t = time.monotonic_ns()
    while True:
        now = time.monotonic_ns()
        if now >= next_t:
            log.write(f"{now} {time.process_time_ns()}\n")
            next_t = now + 10_000_000
