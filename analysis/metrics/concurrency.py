"""Concurrency per pool: how many of a pool's threads are busy, over time and on the whole.

Busy is defined in ``busy.py``. Utilisation is busy thread-time / (pool size x window);
the share of cores is mean concurrency / schedulable CPUs, classed as VTune does:
idle (< 0.5 core busy), poor (<= 50 % of cores), ok (<= 85 %), ideal (> 85 %), and
"over" when more threads are busy on average than there are cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import merged_busy, pool_thread_keys, trace_window
from tftrace.analysis.metrics.intervals import StepFunction, count_open
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

CONFIGURED = {Pool.INTER_OP: "inter_op", Pool.INTRA_OP: "intra_op"}


@dataclass(frozen=True)
class PoolConcurrency:
    pool: Pool
    window: tuple[int, int]
    threads: int  # threads known in the pool (any source)
    size_configured: int | None  # from the manifest (inter/intra-op only)
    size_observed: int  # threads of the pool busy at some point in the window
    busy_thread_ns: int
    mean: float  # average number of busy threads over the window
    peak: int
    level_ns: tuple[int, ...]  # time with 0, 1, ..., peak threads busy
    cores: int | None
    # c(t) itself, kept so that figures bin it without finding the busy intervals again
    function: StepFunction = field(repr=False, compare=False)

    @property
    def size(self) -> int:
        return self.size_configured or self.threads

    @property
    def utilisation(self) -> float | None:
        width = self.window[1] - self.window[0]
        return self.busy_thread_ns / (self.size * width) if self.size and width > 0 else None

    @property
    def core_share(self) -> float | None:
        return self.mean / self.cores if self.cores else None

    @property
    def core_class(self) -> str | None:
        share = self.core_share
        if share is None:
            return None
        if self.mean < 0.5:
            return "idle"
        if share > 1.0:
            return "over"
        return "poor" if share <= 0.5 else "ok" if share <= 0.85 else "ideal"

    def series(self, resolution_ns: int) -> pd.DataFrame:
        """Mean number of busy threads in each bin of ``resolution_ns`` over the window."""
        lo, hi = self.window
        edges = np.arange(lo, hi + resolution_ns, resolution_ns, dtype=np.int64)
        edges[-1] = min(edges[-1], hi)
        integral = self.function.integral_at(edges)
        widths = np.diff(edges)
        return pd.DataFrame(
            {"t_ns": edges[:-1], "busy_threads": np.diff(integral) / np.maximum(widths, 1)}
        )

    def means(self, starts_ns: np.ndarray, ends_ns: np.ndarray) -> np.ndarray:
        """Mean number of busy threads over each span [start, end) (steps, for one), counting
        only the part inside the window; NaN for a span with none inside it."""
        lo, hi = self.window
        start = np.clip(np.asarray(starts_ns, dtype=np.int64), lo, hi)
        end = np.clip(np.asarray(ends_ns, dtype=np.int64), lo, hi)
        busy = self.function.integral_at(end) - self.function.integral_at(start)
        width = (end - start).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(width > 0, busy / width, np.nan)

    def histogram(self) -> pd.DataFrame:
        width = self.window[1] - self.window[0]
        ns = np.array(self.level_ns, dtype=np.int64)
        return pd.DataFrame(
            {"busy_threads": np.arange(len(ns)), "ns": ns, "fraction": ns / width if width else ns}
        )


def configured_size(run: Run, pool: Pool) -> int | None:
    key = CONFIGURED.get(pool)
    return run.manifest.pool(key).size if key else None


def pool_step_function(
    run: Run, pool: Pool, window: tuple[int, int] | None = None
) -> tuple[StepFunction, dict[int, int]]:
    """c(t) for the pool over the window, and busy ns per thread."""
    lo, hi = window or trace_window(run)
    busy, none = merged_busy(run, lo, hi), np.zeros(0, dtype=np.int64)
    merged = {int(t): busy.get(int(t), (none, none)) for t in pool_thread_keys(run, pool)}
    per_thread = {t: int((e - s).sum()) for t, (s, e) in merged.items()}
    return count_open(merged.values(), lo, hi), per_thread


def pool_concurrency(
    run: Run, pool: Pool, window: tuple[int, int] | None = None
) -> PoolConcurrency:
    lo, hi = window or trace_window(run)
    f, per_thread = pool_step_function(run, pool, (lo, hi))
    busy = int(f.integral_at(np.array([hi]))[0])
    peak = int(f.values.max()) if len(f.values) else 0
    levels = tuple(int(x) for x in f.time_at_level(peak + 1))
    return PoolConcurrency(
        pool=pool,
        window=(lo, hi),
        threads=len(pool_thread_keys(run, pool)),
        size_configured=configured_size(run, pool),
        size_observed=sum(1 for ns in per_thread.values() if ns > 0),
        busy_thread_ns=busy,
        mean=busy / (hi - lo) if hi > lo else 0.0,
        peak=peak,
        level_ns=levels,
        cores=run.manifest.usable_cpus,
        function=f,
    )


def concurrency_series(
    run: Run, pool: Pool, resolution_ns: int, window: tuple[int, int] | None = None
) -> pd.DataFrame:
    """Mean number of busy threads of the pool in each bin of ``resolution_ns``."""
    return pool_concurrency(run, pool, window).series(resolution_ns)


ANALYSED_POOLS = (Pool.INTER_OP, Pool.INTRA_OP, Pool.TF_DATA, Pool.PYTHON_MAIN)


def pool_concurrencies(
    run: Run, window: tuple[int, int] | None = None
) -> dict[Pool, PoolConcurrency]:
    """``pool_concurrency`` of every analysed pool, in ``ANALYSED_POOLS`` order."""
    return {pool: pool_concurrency(run, pool, window) for pool in ANALYSED_POOLS}


def pools_frame(concurrencies: dict[Pool, PoolConcurrency]) -> pd.DataFrame:
    """One row per pool with its size, concurrency and utilisation."""
    rows = []
    for pool, c in concurrencies.items():
        rows.append(
            {
                "pool": pool.value,
                "threads": c.threads,
                "configured": c.size_configured,
                "observed": c.size_observed,
                "mean": c.mean,
                "peak": c.peak,
                "utilisation": c.utilisation,
                "core_share": c.core_share,
                "core_class": c.core_class,
                "busy_thread_s": c.busy_thread_ns / 1e9,
            }
        )
    return pd.DataFrame(rows)


def pools_table(run: Run, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per analysed pool with its size, concurrency and utilisation."""
    return pools_frame(pool_concurrencies(run, window))
