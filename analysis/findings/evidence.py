"""Small readers of the Metrics that the rules share: a breakdown share, a pool's row, ..."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from tftrace.analysis.findings.finding import Severity
from tftrace.analysis.metrics.intervals import clip
from tftrace.analysis.model.categories import equals
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import EXECUTOR_CONTEXT_TYPE, EXECUTOR_PROCESS

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics


def category_share(analysis: Metrics, category: str) -> float:
    b = analysis.breakdown.set_index("category")["share"]
    return float(b.get(category, 0.0))


def pool_row(analysis: Metrics, pool: Pool) -> pd.Series | None:
    rows = analysis.pools[analysis.pools["pool"] == pool.value]
    return rows.iloc[0] if len(rows) else None


def cpu_row(analysis: Metrics, pool: Pool) -> pd.Series | None:
    rows = analysis.cpu[analysis.cpu["pool"] == pool.value]
    return rows.iloc[0] if len(rows) else None


def severity_for(share: float) -> Severity:
    return Severity.HIGH if share >= 0.25 else Severity.MEDIUM if share >= 0.1 else Severity.LOW


def parallelism_while_busy(analysis: Metrics, pool: Pool) -> float | None:
    """Mean busy threads of ``pool`` over the time at least one was busy (None: never busy):
    how many things the pool did at a time when it worked, whatever its idle time."""
    c = analysis.concurrency.get(pool)
    return None if c is None else _mean_while_any(c.level_ns)


def function_runs_in_flight(run: Run, pool: Pool, window: tuple[int, int]) -> float | None:
    """Mean number of executor runs (one per call of a tf.data function: one element through a
    map) open at a time on ``pool``'s threads, over the time at least one was (None: no
    executor event with a run id there). A run spans its first to its last ``ExecutorState``
    event, on whatever threads it ran: one element's independent ops on two threads count once.
    """
    threads = run.threads.loc[run.threads["pool"] == pool.value, "thread"]
    ev = run.events
    ex = ev[
        ev["thread"].isin(threads)
        & equals(ev["name"], EXECUTOR_PROCESS)
        & (ev["ct"] == EXECUTOR_CONTEXT_TYPE).fillna(False).to_numpy(dtype=bool)
    ].dropna(subset=["c"])
    if ex.empty:
        return None
    runs = ex.groupby("c").agg(start=("start_ns", "min"), end=("end_ns", "max"))
    lo, hi = window
    s, e = clip(runs["start"].to_numpy(), runs["end"].to_numpy(), lo, hi)
    # runs open at each instant (each run counted apart, not merged): +1 at a start, -1 at an end
    t = np.concatenate([[lo], s, e, [hi]])
    d = np.concatenate([[0], np.ones(len(s)), -np.ones(len(e)), [0]])
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(d[order])[:-1].astype(np.int64)
    width = np.diff(t)
    return _mean_while_any(np.bincount(level, weights=width, minlength=2))


def _mean_while_any(level_ns: np.ndarray | tuple[int, ...]) -> float | None:
    levels = np.asarray(level_ns, dtype=np.float64)
    working = float(levels[1:].sum())
    return float((np.arange(len(levels)) * levels).sum()) / working if working > 0 else None
