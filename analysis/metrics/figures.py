"""The figures of a window as plot-ready tables: concurrency over time and its histogram, the
queue-delay distribution, the breakdown's bars, per-step concurrency (and the steps binned
to what TensorBoard keeps), threads on a CPU.

``Metrics`` holds them (computed at first use: ``tftrace analyze`` prints none of them); the
report's plots, TensorBoard and the tab draw them as they are. Times on their axes are
seconds since the start of the window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.breakdown import CATEGORIES
from tftrace.analysis.metrics.census import Census
from tftrace.analysis.metrics.concurrency import PoolConcurrency
from tftrace.analysis.metrics.queue_delay import queue_delay_histogram
from tftrace.analysis.metrics.steps import Steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

SERIES_BINS = 400  # bins of the concurrency-over-time figure: ~2 px each at report width
MAX_STEP_BARS = 20
STEP_POINTS = 1000  # TensorBoard keeps 1,000 points of a series: more steps are binned
CONCURRENCY_PREFIX = "concurrency/"  # per-step pool columns, apart from the breakdown's


def _seconds(t_ns: np.ndarray | pd.Series, lo: int) -> np.ndarray:
    return (np.asarray(t_ns, dtype=np.int64) - lo) / 1e9


def concurrency_stack(
    concurrencies: Sequence[PoolConcurrency], bins: int = SERIES_BINS
) -> pd.DataFrame:
    """Mean busy threads of each pool per bin (one column per pool value), for a stacked plot.

    Rows are bins of equal width (``PoolConcurrency.series``) over the pools' window;
    ``t_ns``/``t_s`` are bin starts. A last row at the window's end repeats the last bin, so a
    post-step plot reaches the end.
    """
    columns = ["t_ns", "t_s", *(c.pool.value for c in concurrencies)]
    if not concurrencies or concurrencies[0].window[1] <= concurrencies[0].window[0]:
        return pd.DataFrame(columns=columns)
    lo, hi = concurrencies[0].window
    resolution = max(1, -(-(hi - lo) // bins))
    series = {c.pool.value: c.series(resolution) for c in concurrencies}
    t_ns = np.r_[next(iter(series.values()))["t_ns"].to_numpy(), hi]
    frame = pd.DataFrame({"t_ns": t_ns, "t_s": _seconds(t_ns, lo)})
    for pool, s in series.items():
        values = s["busy_threads"].to_numpy()
        frame[pool] = np.r_[values, values[-1:]]
    return frame[columns]


def census_stack(census: Census) -> pd.DataFrame:
    """Threads on a CPU per census pool per bin (``Census.series``), for a stacked plot: a
    last row at the window's end repeats the last bin, as ``concurrency_stack`` does; pools
    never on a CPU in the window are left out. Empty without the OS sampler."""
    series = census.series
    pools = [c for c in series.columns if c not in ("t_ns", "t_s") and series[c].max() > 0]
    if series.empty or not pools:
        return pd.DataFrame(columns=["t_ns", "t_s", *pools])
    lo, hi = census.window
    last = series.iloc[[-1]].assign(t_ns=hi, t_s=(hi - lo) / 1e9)
    return pd.concat([series, last], ignore_index=True)[["t_ns", "t_s", *pools]]


def concurrency_histograms(concurrencies: Sequence[PoolConcurrency]) -> pd.DataFrame:
    """Per pool: time and fraction of the window with 0, 1, ..., peak of its threads busy."""
    frames = [c.histogram().assign(pool=c.pool.value) for c in concurrencies]
    if not frames:
        return pd.DataFrame(columns=["pool", "busy_threads", "ns", "fraction"])
    out = pd.concat(frames, ignore_index=True)
    return out[["pool", "busy_threads", "ns", "fraction"]]


def queue_delay_distribution(
    run: Run, pools: Sequence[Pool], window: tuple[int, int] | None = None
) -> pd.DataFrame:
    """Per pool: closures per log-spaced bin of queue delay (us), and their share of the pool.

    Empty bins at both ends are dropped. The first bin, [0, 1 ns), starts at 0.1 ns instead:
    a log axis has no 0.
    """
    frames = []
    for pool in pools:
        hist = queue_delay_histogram(run, pool.value, window=window)
        counts = hist["closures"].to_numpy()
        if counts.sum() == 0:
            continue
        used = np.flatnonzero(counts)
        hist = hist.iloc[used[0] : used[-1] + 1]
        hi_ns = hist["hi_ns"].to_numpy(dtype=np.float64)
        lo_ns = np.where(hist["lo_ns"].to_numpy() > 0, hist["lo_ns"].to_numpy(), hi_ns / 10)
        frames.append(
            pd.DataFrame(
                {
                    "pool": pool.value,
                    "lo_us": lo_ns / 1e3,
                    "width_us": (hi_ns - lo_ns) / 1e3,
                    "closures": hist["closures"].to_numpy(),
                    "fraction": hist["closures"].to_numpy() / counts.sum(),
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=["pool", "lo_us", "width_us", "closures", "fraction"])
    return pd.concat(frames, ignore_index=True)


def _bar(bar: int, label: str, shares: Sequence[float]) -> pd.DataFrame:
    share = np.asarray(shares, dtype=np.float64)
    left = np.r_[0.0, np.cumsum(share)[:-1]]
    return pd.DataFrame(
        {
            "bar": bar,
            "label": label,
            "category": list(CATEGORIES),
            "share": share,
            "left": left,
            "mid": left + share / 2,
        }
    )


def breakdown_bars(
    breakdown: pd.DataFrame,
    steps: Steps,
    window: tuple[int, int],
    max_steps: int = MAX_STEP_BARS,
) -> pd.DataFrame:
    """Stacked-bar segments of the wall-time breakdown: bar 0 the window, then the first steps.

    One row per (bar, category), in ``CATEGORIES`` order; ``left`` is where the segment starts
    (shares of the bar, adding up to 1), ``mid`` its centre for a label.
    """
    width_ms = (window[1] - window[0]) / 1e6
    shares = breakdown.set_index("category").reindex(list(CATEGORIES))["share"].fillna(0.0)
    bars = [_bar(0, f"window ({width_ms:.1f} ms)", shares.to_list())]
    for bar, (_, step) in enumerate(steps.table.head(max_steps).iterrows(), start=1):
        label = f"step {int(step['step'])} ({step['duration_ns'] / 1e6:.1f} ms)"
        bars.append(_bar(bar, label, [float(step[c]) for c in CATEGORIES]))
    return pd.concat(bars, ignore_index=True)


def step_concurrency(steps: Steps, concurrency: Mapping[Pool, PoolConcurrency]) -> pd.DataFrame:
    """Per step: each pool's mean number of busy threads during the step
    (``PoolConcurrency.means``), one column per pool value beside ``step``."""
    table = steps.table
    frame = pd.DataFrame({"step": table["step"].to_numpy()})
    starts, ends = table["start_ns"].to_numpy(), table["end_ns"].to_numpy()
    for pool, busy in concurrency.items():
        frame[pool.value] = busy.means(starts, ends)
    return frame


def step_points(table: pd.DataFrame, max_points: int = STEP_POINTS) -> pd.DataFrame:
    """The steps table as at most ``max_points`` rows: each row the mean of a run of
    consecutive steps (duration and shares), numbered and placed by its last step. TensorBoard
    keeps 1,000 points of a series and would drop the rest at random; a long training has
    tens of thousands of steps."""
    if len(table) <= max_points:
        return table
    group = np.arange(len(table)) * max_points // len(table)
    means = table.drop(columns=["step", "start_ns", "end_ns"]).groupby(group).mean()
    last = table.groupby(group)[["step", "start_ns", "end_ns"]].last()
    return pd.concat([last, means], axis=1).reset_index(drop=True)


def steps_with_concurrency(steps: Steps, concurrency: pd.DataFrame) -> pd.DataFrame:
    """The steps table with each pool's mean concurrency per step (``step_concurrency``) as
    ``concurrency/<pool>`` columns, as ``step_points``: what TensorBoard and the tab plot."""
    pools = concurrency.drop(columns="step").add_prefix(CONCURRENCY_PREFIX)
    return step_points(pd.concat([steps.table.reset_index(drop=True), pools], axis=1))
