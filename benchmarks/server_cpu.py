"""What a server's requests cost in CPU at each thread setting, by the kernel's count: the
figure a replay of one recording takes as fixed, measured at every setting.

    .venv/bin/python benchmarks/server_cpu.py [--workload serve_executor.py] [--grid 2/2,2/1,1/1]

Each setting is recorded once (``tftrace record --no-pyspy``, fresh processes, in the order
given) and analysed over its steady window. Printed per setting: requests per second; per
request, the CPU each kind of thread used (the OS sampler's schedstat counters: the request
threads, which run the Python and dispatch the calls, the inter-op and the intra-op pools)
and how often each kind was put on a CPU (context switches in, schedstat's third counter).
``tftrace predict`` replays the recorded setting's work at every other setting; where a
server's CPU per request moves with the setting, that is the part of its error no single
recording shows (docs/predict.md, "A server's CPU per request").

Nothing is asserted: one run a setting on a shared machine; rerun it to see the spread.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import tftrace
from tftrace.analysis.metrics.cpu_time import counter_growth
from tftrace.analysis.model.run import Run

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "tests" / "workloads"
KINDS = (("request threads", "python-other"), ("inter-op", "inter-op"), ("intra-op", "intra-op"))


def _grown(run: Run, pool: str, column: str, lo: int, hi: int) -> float:
    """A cumulative counter's growth over [lo, hi], summed over the pool's threads
    (``cpu_time.counter_growth``)."""
    threads = set(run.threads.loc[run.threads["pool"].astype(str) == pool, "thread"])
    return sum(
        counter_growth(group["t_ns"].to_numpy(), group[column].to_numpy(np.float64), lo, hi)
        for thread, group in run.samples.groupby("thread")
        if thread in threads
    )


def measure(script: Path, args: list[str], intra: int, inter: int, out: Path) -> list[str]:
    env = {
        **os.environ,
        "TF_NUM_INTRAOP_THREADS": str(intra),
        "TF_NUM_INTEROP_THREADS": str(inter),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    result = tftrace.record(script, args, output=out, pyspy=False, echo=False, env=env)
    if result.exit_code != 0:
        sys.exit(f"{intra}/{inter}: the workload exited with {result.exit_code}; see {out}")
    run = tftrace.load(out)
    analysis = tftrace.analyze(run)
    if analysis.requests is None:
        sys.exit(f"{intra}/{inter}: not analysed as a server; see {out}")
    lo, hi = analysis.window
    ends = analysis.requests.table["end_ns"]
    n = int(((ends > lo) & (ends <= hi)).sum())
    if n == 0:
        sys.exit(f"{intra}/{inter}: no request ended in the steady window; see {out}")
    row = [f"{intra}/{inter}", f"{n / ((hi - lo) / 1e9):.0f}"]
    cpu_total = 0.0
    for _, pool in KINDS:
        cpu = _grown(run, pool, "cpu_ns", lo, hi) / n / 1e3
        cpu_total += cpu
        row += [f"{cpu:.0f}", f"{_grown(run, pool, 'slices', lo, hi) / n:.1f}"]
    return [*row, f"{cpu_total:.0f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="serve_executor.py")
    parser.add_argument("--args", default="--clients 4", help="the workload's arguments")
    parser.add_argument("--grid", default="2/2,2/1,1/1,1/2,4/1,4/2,2/4")
    args = parser.parse_args(argv)
    settings = [tuple(int(x) for x in s.split("/")) for s in args.grid.split(",")]
    header = ["intra/inter", "requests/s"]
    for kind, _ in KINDS:
        header += [f"{kind} CPU us", f"{kind} switches"]
    print(" | ".join([*header, "CPU us a request"]))
    with tempfile.TemporaryDirectory(prefix="tftrace-server-cpu-") as tmp:
        for intra, inter in settings:
            row = measure(
                WORKLOADS / args.workload, args.args.split(), intra, inter,
                Path(tmp) / f"{intra}-{inter}",
            )  # fmt: skip
            print(" | ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
