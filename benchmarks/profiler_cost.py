"""Does a run profiled over a window measure the profiler's own cost? And how much of the time
``tftrace predict``'s replay cannot place is that cost?

    .venv/bin/python benchmarks/profiler_cost.py [--rounds 2] [--only NAMES]

Each workload is recorded at intra-op 2, inter-op 2 (on 2 CPUs: its cores oversubscribed, as
the diagnosis corpus records it) with the TF profiler over a window of steps, and run once
more with no profiler at all (the sweep's timed run: the step timer alone), in alternating
order, ``--rounds`` times. Printed per workload, medians over the rounds:

    profiled       a step inside the window (the run's own timing, ``metrics.profiler_cost``)
    unprofiled     a step after the window, in the same run
    no profiler    the same steps (those after the window) in the run without the profiler:
                   the known answer the unprofiled figure is checked against (ratio ~1)
    cost           what the profiler added: profiled / unprofiled - 1
    unplaced       the recorded time a step that the replay of the recorded setting does
                   not place (``tftrace predict``: what it charges to crowding, or its
                   negative residual), beside the profiler's cost a step

Fresh processes on a shared 2-core machine differ by 5-10 %: the ratio to the run without
the profiler is for information, and nothing is asserted; the exit status is 1 only when a
run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import tftrace
from tftrace.analysis.model.timed_steps import read_timed_steps
from tftrace.analysis.sweep.timing import from_steps
from tftrace.tracer.options import Target
from tftrace.tracer.recorder import record
from tftrace.tracer.sweep import timing_options

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "tests" / "workloads"
ENV = {"TF_NUM_INTRAOP_THREADS": "2", "TF_NUM_INTEROP_THREADS": "2", "TF_CPP_MIN_LOG_LEVEL": "3"}


@dataclass(frozen=True)
class Case:
    name: str
    script: str
    args: tuple[str, ...]
    window: tuple[int, int]  # the profiled steps; the rest of them are timed after it


CASES = (
    Case("small-ops-steps", "small_ops_steps.py", ("60",), (10, 25)),
    Case("branches", "branches.py", ("--steps", "40"), (10, 20)),
    Case("keras-custom", "keras_fit_custom.py", ("--batches", "60"), (10, 25)),
    Case("keras-mobilenet", "keras_fit_mobilenet.py", ("--batches", "40"), (8, 18)),
)


def profiled_run(case: Case, out: Path) -> tuple[float, float, float]:
    """(profiled s, unprofiled s, unplaced s) a step, from one run profiled over the window."""
    result = tftrace.record(
        WORKLOADS / case.script,
        list(case.args),
        output=out,
        steps=case.window,
        pyspy=False,
        echo=False,
        env={**os.environ, **ENV},
    )
    if result.exit_code != 0:
        sys.exit(f"{case.name}: the profiled run exited with {result.exit_code}; see {out}")
    cost = tftrace.analyze(tftrace.load(out)).profiler_cost
    if cost is None:
        sys.exit(f"{case.name}: no profiler's cost measured; see {out}")
    # in a process of its own, as a user runs it (the replay holds the whole window)
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "tftrace",
            "predict",
            str(out),
            "--json",
            "--intra",
            "2",
            "--inter",
            "2",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    guess = json.loads(shown.stdout)
    recorded_s = guess["recorded_ms"] / 1e3
    unplaced = (
        guess["charged"] * recorded_s if guess["charged"] else -guess["residual"] * recorded_s
    )
    return cost.profiled_s, cost.unprofiled_s, unplaced


def unprofiled_run(case: Case, out: Path) -> float:
    """A step after the window's end, in a run without the profiler."""
    target = Target("script", str(WORKLOADS / case.script), case.args)
    result = record(timing_options(target, out, dict(ENV)))
    if result.exit_code != 0:
        sys.exit(f"{case.name}: the run without the profiler exited with {result.exit_code}")
    rows = read_timed_steps(out, 0, [])
    main = rows.attrs.get("main_thread")
    mine = rows[rows["thread"] == main].sort_values("start_ns").iloc[case.window[1] :]
    mine.attrs["main_thread"] = main
    timing = from_steps(mine, 1)
    if timing is None or not timing.steps:
        sys.exit(f"{case.name}: too few steps after the window in the run without the profiler")
    return timing.per_unit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", help="comma-separated case names")
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    header = ("workload", "profiled ms", "unprofiled ms", "no profiler ms", "unprofiled / none")
    print(" | ".join((*header, "cost", "unplaced ms", "cost ms")))
    with tempfile.TemporaryDirectory(prefix="tftrace-profiler-cost-") as tmp:
        for case in chosen:
            figures: list[tuple[float, float, float, float]] = []
            for r in range(args.rounds):
                profiled_dir, none_dir = (Path(tmp) / f"{case.name}-{r}-{k}" for k in "pn")
                if r % 2 == 0:  # alternating which runs first
                    measured, none = (
                        profiled_run(case, profiled_dir),
                        unprofiled_run(case, none_dir),
                    )
                else:
                    none, measured = (
                        unprofiled_run(case, none_dir),
                        profiled_run(case, profiled_dir),
                    )
                figures.append((measured[0], measured[1], none, measured[2]))
            p, u, n, x = (statistics.median(f[i] for f in figures) for i in range(4))
            print(
                f"{case.name} | {p * 1e3:.2f} | {u * 1e3:.2f} | {n * 1e3:.2f} | {u / n:.3f} | "
                f"{p / u - 1:+.0%} | {x * 1e3:.2f} | {(p - u) * 1e3:.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
