"""Why a step got faster or slower, in two factors the trace measures per step.

A step's wall time is its busy thread-time (ns that TensorFlow's pool threads spent owning
work in it, ``metrics/busy.py``) divided by its parallelism (threads busy on average in it):

    step time = busy thread-time / threads busy

Settings that size the pools act on the second factor. A machine that runs the same work
more slowly per core (load from outside, a shared host, a slower CPU) acts on the first
only: every op takes longer, and as many threads are busy as before. So when two runs'
manifests are identical (the same script text, arguments, versions, environment, settings
and CPUs) and their parallelism is the same, a difference in step time is the machine's, and
the diff says so instead of calling it an effect of the workload.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tftrace.analysis.diff.stats import (
    SAME,
    TOO_FEW,
    SampleComparison,
    StepTimeDiff,
    compare_samples,
)
from tftrace.analysis.metrics.busy import merged_busy
from tftrace.analysis.metrics.intervals import count_open
from tftrace.analysis.model.pools import Pool

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

# Python threads are left out: the main thread is inside the step's call for all of it, which
# would add one to every step's parallelism whatever the pools do.
WORKER_POOLS = tuple(p.value for p in Pool if p not in (Pool.PYTHON_MAIN, Pool.PYTHON_OTHER))
# A change in parallelism smaller than this (as a ratio) is too small to be the cause of a
# significant change in step time: per-step overheads fixed in ns alone shift it that much.
PARALLELISM_TOLERANCE = 0.05


def step_factors(analysis: Analysis) -> pd.DataFrame:
    """One row per steady step: step, ms, busy_ms (pool threads' busy time in the step) and
    threads_busy (busy_ms / ms: the step's parallelism)."""
    table = analysis.steps.table
    start = table["start_ns"].to_numpy(dtype=np.int64)
    end = table["end_ns"].to_numpy(dtype=np.int64)
    busy = np.zeros(len(table))
    if len(table):
        run = analysis.run
        lo, hi = int(start.min()), int(end.max())
        workers = run.threads.loc[run.threads["pool"].isin(WORKER_POOLS), "thread"]
        every = merged_busy(run, lo, hi)
        sets = [every[int(t)] for t in workers if int(t) in every]
        if sets:
            level = count_open(sets, lo, hi)
            busy = (level.integral_at(end) - level.integral_at(start)) / 1e6
    ms = (end - start) / 1e6
    with np.errstate(invalid="ignore", divide="ignore"):
        threads = np.where(ms > 0, busy / ms, np.nan)
    return pd.DataFrame(
        {"step": table["step"].to_numpy(), "ms": ms, "busy_ms": busy, "threads_busy": threads}
    )


@dataclass(frozen=True)
class StepFactors:
    """B against A in each factor: ``parallelism`` (threads busy per step) and ``busy_time``
    (busy thread-ms per step), each a ``SampleComparison`` (ratio = median B / median A)."""

    parallelism: SampleComparison
    busy_time: SampleComparison

    @property
    def parallelism_changed(self) -> bool:
        """Whether the parallelism differs, significantly and by more than
        ``PARALLELISM_TOLERANCE``."""
        p = self.parallelism
        return p.significant and abs(p.ratio - 1.0) > PARALLELISM_TOLERANCE

    def describe(self) -> str:
        p, w = self.parallelism, self.busy_time
        return (
            f"threads busy per step {p.a_median:.2f} -> {p.b_median:.2f} "
            f"({'changed' if self.parallelism_changed else 'unchanged'}), busy thread-time per "
            f"step {w.a_median:.1f} -> {w.b_median:.1f} ms (x{w.ratio:.3f}"
            f"{', significant' if w.significant else ''})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "parallelism": self.parallelism.to_json(),
            "busy_time": self.busy_time.to_json(),
            "parallelism_changed": self.parallelism_changed,
            "tolerance": PARALLELISM_TOLERANCE,
        }


def compare_factors(a: Analysis, b: Analysis) -> StepFactors:
    fa, fb = step_factors(a), step_factors(b)
    return StepFactors(
        parallelism=compare_samples(fa["threads_busy"].dropna(), fb["threads_busy"].dropna()),
        busy_time=compare_samples(fa["busy_ms"], fb["busy_ms"]),
    )


def ops_differ(a: pd.DataFrame, b: pd.DataFrame, tolerance: float = 0.05) -> list[str]:
    """The op types run a different number of times per step on the two sides (by more than
    ``tolerance`` of the larger count, and by at least half an op): a different graph, or
    different work. ``a`` and ``b``: count per step, indexed by op type."""
    ca, cb = a.align(b, fill_value=0.0)
    gap = (ca - cb).abs()
    return sorted(gap[(gap > 0.5) & (gap > tolerance * ca.combine(cb, max))].index.astype(str))


def explain(
    step_time: StepTimeDiff, factors: StepFactors, manifest: pd.DataFrame, changed_ops: list[str]
) -> StepTimeDiff:
    """The step-time verdict, with the machine's share taken out where it is the only cause.

    A significant difference stands unless nothing in the manifests differs (the workload's
    files included), every op type ran as often per step and the parallelism is unchanged:
    then the verdict is "no significant difference" and ``per_step_verdict`` keeps what the
    per-step test alone said."""
    if step_time.verdict in (SAME, TOO_FEW):
        return step_time
    why = factors.describe()
    if not manifest.empty or changed_ops or factors.parallelism_changed:
        return step_time.with_reason(f"{step_time.reason}; {why}")
    return step_time.overruled(
        SAME,
        f"{SAME} that the workload explains: its steps were {step_time.verdict} by a factor "
        f"of {step_time.speedup:.3f}, but nothing its manifests record differs, every op "
        f"type ran as often per step and the parallelism is the same ({why}): the same work "
        "ran at another speed per thread, the machine's (load from outside, a shared host), "
        "not the workload's",
    )
