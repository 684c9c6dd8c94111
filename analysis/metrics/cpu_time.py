"""CPU truth from the OS sampler, beside the trace's busy time.

The sampler's counters are cumulative (schedstat: ns on CPU, ns waiting on a run queue),
so the amount in a window is the difference of the counters interpolated at its edges.
CPU above traced busy time is spin or work the trace does not show (Eigen workers spin
before they sleep); run-queue wait is time a thread was runnable but no core was free.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import busy_intervals, trace_window
from tftrace.analysis.metrics.intervals import StepFunction, concurrency
from tftrace.analysis.model.run import Run


def counter_growth(t: np.ndarray, value: np.ndarray, lo: int, hi: int) -> float:
    """Growth of a cumulative counter over [lo, hi], linear between samples.

    A thread first seen after ``lo`` was born in the window: its counters started at 0; one
    first seen after ``hi`` counts nothing (its first counts are from after the window).
    """
    if len(t) == 0:
        return float("nan")
    if t[0] > hi:
        return 0.0
    start = np.interp(lo, t, value) if t[0] <= lo else 0.0
    return float(np.interp(hi, t, value) - start)


def counter_at(t: np.ndarray, value: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """A cumulative counter at each edge, linear between samples; 0 before the thread's first
    sample (a thread first seen in the window was born in it, as ``counter_growth`` takes
    it): its growth between two edges is the difference."""
    grown = np.interp(edges, t, value.astype(np.float64))
    return np.where(edges < t[0], 0.0, grown)


def _outside_busy(t: np.ndarray, cpu: np.ndarray, busy: StepFunction, lo: int, hi: int) -> float:
    """CPU a thread accrued beyond its traced busy time, summed sample interval by interval.

    In each interval between two samples (cut at the window's edges), the CPU the counter
    grew by minus the time the trace shows the thread busy; an interval where busy time
    exceeds CPU (the thread waited for a core while busy) adds nothing, so waiting in one
    interval does not hide spinning in another as the window's plain difference would.
    """
    if len(t) == 0 or hi <= lo:
        return float("nan")
    edges = np.unique(np.r_[lo, t[(t > lo) & (t < hi)], hi])
    grown = np.interp(edges, t, cpu)
    if t[0] > lo:  # born in the window: its counter started at 0
        grown = np.where(edges < t[0], 0.0, grown)
    traced = busy.integral_at(edges)
    return float(np.maximum(np.diff(grown) - np.diff(traced), 0).sum())


def process_cumulative(run: Run, column: str, grid: np.ndarray) -> np.ndarray:
    """Σ over the process's threads of a cumulative sampler counter (``cpu_ns``, ``wait_ns``)
    at each grid time (0 before a thread's first sample: it was born later)."""
    total = np.zeros(len(grid))
    for _, group in run.samples.groupby(["thread", "tid"], sort=False):
        t, value = group["t_ns"].to_numpy(), group[column].to_numpy().astype(np.float64)
        grown = np.interp(grid, t, value)
        total += np.where(grid < t[0], 0.0, grown)
    return total


def thread_cpu(run: Run, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """Per OS thread: on-CPU ns, run-queue wait ns (both from /proc), traced busy ns, and the
    CPU it used outside its traced busy time (``outside_busy_ns``: spin, or untraced work)."""
    lo, hi = window or trace_window(run)
    samples = run.samples
    if samples.empty:
        return pd.DataFrame(
            columns=[
                "thread",
                "tid",
                "pool",
                "cpu_ns",
                "wait_ns",
                "busy_ns",
                "untraced_ns",
                "outside_busy_ns",
            ]
        )
    busy = busy_intervals(run, run.threads["thread"].to_numpy())
    pool_of = run.threads.set_index("thread")["pool"].astype(str)
    rows = []
    for (thread, tid), group in samples.groupby(["thread", "tid"], sort=True):
        t = group["t_ns"].to_numpy()
        cpu = counter_growth(t, group["cpu_ns"].to_numpy(), lo, hi)
        wait = counter_growth(t, group["wait_ns"].to_numpy(), lo, hi)
        s, e = busy.get(int(thread), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        busy_fn = concurrency([s], [e], lo, hi)
        traced = float(busy_fn.integral_at(np.array([hi]))[0])
        rows.append(
            {
                "thread": int(thread),
                "tid": int(tid),
                "pool": pool_of.get(int(thread), "unmapped"),
                "cpu_ns": cpu,
                "wait_ns": wait,
                "busy_ns": traced,
                "untraced_ns": cpu - traced,
                "outside_busy_ns": _outside_busy(t, group["cpu_ns"].to_numpy(), busy_fn, lo, hi),
            }
        )
    return pd.DataFrame(rows)


def pool_cpu(run: Run, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """Per pool: CPU seconds, traced busy seconds, their ratio and run-queue wait."""
    per_thread = thread_cpu(run, window)
    if per_thread.empty:
        return pd.DataFrame(
            columns=["pool", "threads", "cpu_s", "busy_s", "cpu_per_busy", "wait_s", "outside_s"]
        )
    grouped = per_thread.groupby("pool", sort=False).agg(
        threads=("thread", "count"),
        cpu_ns=("cpu_ns", "sum"),
        busy_ns=("busy_ns", "sum"),
        wait_ns=("wait_ns", "sum"),
        outside_ns=("outside_busy_ns", "sum"),
    )
    return pd.DataFrame(
        {
            "pool": grouped.index,
            "threads": grouped["threads"].to_numpy(),
            "cpu_s": grouped["cpu_ns"].to_numpy() / 1e9,
            "busy_s": grouped["busy_ns"].to_numpy() / 1e9,
            "cpu_per_busy": (
                grouped["cpu_ns"] / grouped["busy_ns"].where(grouped["busy_ns"] > 0)
            ).to_numpy(),
            "wait_s": grouped["wait_ns"].to_numpy() / 1e9,
            "outside_s": grouped["outside_ns"].to_numpy() / 1e9,
        }
    )
