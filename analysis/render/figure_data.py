"""Plot-ready tables for the report's figures: pure functions of a Run and its Analysis.

Every figure of ``tftrace report`` is drawn by ``plots.py`` from one of these DataFrames
and nothing else, so what a figure shows is decided (and tested) here, without matplotlib.
Times on the figures' axes are seconds since the start of the analysed window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.analyze import Analysis
from tftrace.analysis.metrics.breakdown import CATEGORIES
from tftrace.analysis.metrics.busy import busy_intervals
from tftrace.analysis.metrics.census import Census
from tftrace.analysis.metrics.concurrency import PoolConcurrency
from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.metrics.queue_delay import queue_delay_histogram
from tftrace.analysis.metrics.requests import Requests
from tftrace.analysis.metrics.steps import Steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

SERIES_BINS = 400  # bins of the concurrency-over-time figure: ~2 px each at report width
TIMELINE_RESOLUTION = 2000  # gaps under 1/2000 of the window are below a pixel: not drawn
MAX_STEP_BARS = 20
REQUEST_BINS = 100  # bins of a server's requests over time: a few requests end in each
LATENCY_BINS_PER_DECADE = 10  # the request latency distribution's log-spaced bins
# Timeline rows: the driver first, then the pools that run TF's work, then the rest.
_FIRST = (
    Pool.PYTHON_MAIN,
    Pool.INTER_OP,
    Pool.INTRA_OP,
    Pool.TF_DATA,
    Pool.TF_OTHER,
    Pool.PYTHON_OTHER,
)
TIMELINE_ORDER = (*_FIRST, *(p for p in Pool if p not in _FIRST))
_RANK = {pool.value: rank for rank, pool in enumerate(TIMELINE_ORDER)}


@dataclass(frozen=True)
class RequestPlotData:
    """A server's figures: its requests over time and their latency."""

    over_time: pd.DataFrame  # requests_over_time
    latency: pd.DataFrame  # latency_distribution
    percentiles: pd.DataFrame  # Requests.latency(): p50, p90, p99 ... per function, "all" first


@dataclass(frozen=True)
class ReportPlotData:
    """Everything the report's figures show, one table per figure."""

    concurrency: pd.DataFrame  # concurrency_stack
    cores: int | None  # schedulable CPUs, the reference line of the concurrency figure
    histograms: pd.DataFrame  # concurrency_histograms
    timeline: pd.DataFrame  # thread_timeline
    queue_delay: pd.DataFrame  # queue_delay_distribution
    breakdown: pd.DataFrame  # breakdown_bars
    requests: RequestPlotData | None = None  # a server's; None for a loop
    census: pd.DataFrame | None = None  # census_stack; None without a census
    census_cpus: int | None = None  # usable CPUs, the census figure's reference line


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


def thread_label(thread: pd.Series) -> str:
    """'pool: TF or Python name (tid N)': the name that tells the thread apart in its pool."""
    name = next(
        (
            str(thread[c])
            for c in ("tf_name", "python_name", "line_name", "os_name")
            if pd.notna(thread[c])
        ),
        "?",
    )
    tid = f"tid {int(thread['tid'])}" if pd.notna(thread["tid"]) else "no tid"
    return f"{thread['pool']}: {name} ({tid})"


def _close_gaps(start: np.ndarray, end: np.ndarray, min_gap_ns: int) -> tuple[np.ndarray, ...]:
    """Join disjoint sorted intervals separated by less than ``min_gap_ns`` (sub-pixel gaps)."""
    if min_gap_ns <= 0 or len(start) < 2:
        return start, end
    new = np.r_[True, (start[1:] - end[:-1]) >= min_gap_ns]
    last = np.r_[np.flatnonzero(new)[1:] - 1, len(end) - 1]
    return start[new], end[last]


def _timeline_threads(run: Run) -> pd.DataFrame:
    ranks = run.threads["pool"].astype(str).map(_RANK).fillna(len(_RANK))
    return run.threads.assign(_rank=ranks.to_numpy()).sort_values(["_rank", "thread"])


def thread_timeline(run: Run, window: tuple[int, int], min_gap_ns: int = 0) -> pd.DataFrame:
    """Every thread busy in the window: its merged busy intervals (``busy.py``), one row each.

    ``row`` numbers the threads from the top of the figure (main thread, inter-op, intra-op,
    tf.data, ...); gaps shorter than ``min_gap_ns`` are closed to keep the drawing small.
    """
    lo, hi = window
    threads = _timeline_threads(run)
    intervals = busy_intervals(run, threads["thread"].to_numpy())
    parts: list[pd.DataFrame] = []
    for _, thread in threads.iterrows():
        start, end = union(*clip(*intervals[int(thread["thread"])], lo, hi))
        start, end = _close_gaps(start, end, min_gap_ns)
        if len(start):
            parts.append(
                pd.DataFrame(
                    {
                        "row": len(parts),
                        "thread": int(thread["thread"]),
                        "label": thread_label(thread),
                        "pool": str(thread["pool"]),
                        "start_ns": start,
                        "end_ns": end,
                        "start_s": _seconds(start, lo),
                        "width_s": (end - start) / 1e9,
                    }
                )
            )
    if not parts:
        return pd.DataFrame(
            columns=["row", "thread", "label", "pool", "start_ns", "end_ns", "start_s", "width_s"]
        )
    return pd.concat(parts, ignore_index=True)


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


def step_concurrency(analysis: Analysis) -> pd.DataFrame:
    """Per step of the analysis: each analysed pool's mean number of busy threads during the
    step (``PoolConcurrency.means``), one column per pool value beside ``step``."""
    table = analysis.steps.table
    frame = pd.DataFrame({"step": table["step"].to_numpy()})
    starts, ends = table["start_ns"].to_numpy(), table["end_ns"].to_numpy()
    for pool in analysis.pools["pool"]:
        frame[str(pool)] = analysis.concurrency[Pool(pool)].means(starts, ends)
    return frame


OVER_TIME_COLUMNS = ["t_ns", "t_s", "in_flight", "completed", "completed_per_s"]


def requests_over_time(
    requests: Requests, bins: int = REQUEST_BINS, resolution_ns: int | None = None
) -> pd.DataFrame:
    """Per bin of equal width over the requests' window (``bins`` of them, or
    ``resolution_ns`` wide): the mean number of requests in flight (``Requests.in_flight``),
    and the requests that ended in the bin, as a count and per second of the bin (the last
    bin ends with the window). ``t_ns`` is the bin's start on the run's axis, ``t_s`` in
    seconds since the window's start."""
    lo, hi = requests.window
    if hi <= lo or requests.table.empty:
        return pd.DataFrame(columns=OVER_TIME_COLUMNS)
    step = resolution_ns or max(1, -(-(hi - lo) // bins))
    flight = requests.in_flight(step)["in_flight"].to_numpy()
    edges = lo + step * np.arange(len(flight) + 1, dtype=np.int64)
    ended = np.histogram(requests.table["end_ns"].to_numpy(dtype=np.int64), bins=edges)[0]
    widths_s = (np.minimum(edges[1:], hi) - edges[:-1]) / 1e9
    return pd.DataFrame(
        {
            "t_ns": edges[:-1],
            "t_s": _seconds(edges[:-1], lo),
            "in_flight": flight,
            "completed": ended,
            "completed_per_s": ended / widths_s,
        }
    )


LATENCY_COLUMNS = ["function", "lo_ms", "width_ms", "requests", "fraction"]


def latency_distribution(
    requests: Requests, per_decade: int = LATENCY_BINS_PER_DECADE
) -> pd.DataFrame:
    """Requests per log-spaced bin of latency (ms), and their share: of all requests
    (``function`` = "all") where one function serves them, else per function (each share of
    its own requests). The same bins for every function; empty bins at both ends dropped."""
    table = requests.table
    if table.empty:
        return pd.DataFrame(columns=LATENCY_COLUMNS)
    ms = np.maximum(table["latency_ns"].to_numpy(dtype=np.float64), 1.0) / 1e6
    first = np.floor(np.log10(ms.min()) * per_decade)
    last = max(np.ceil(np.log10(ms.max()) * per_decade), first + 1)
    edges = 10.0 ** (np.arange(first, last + 1) / per_decade)
    # rounding must not leave the shortest or the longest request out of every bin
    edges[0], edges[-1] = min(edges[0], ms.min()), max(edges[-1], ms.max())
    functions = table["function"].astype(str).to_numpy()
    names = sorted(set(functions)) if len(set(functions)) > 1 else ["all"]
    frames = []
    for name in names:
        mine = ms if name == "all" else ms[functions == name]
        counts = np.histogram(mine, bins=edges)[0]
        used = np.flatnonzero(counts)
        keep = slice(used[0], used[-1] + 1)
        frames.append(
            pd.DataFrame(
                {
                    "function": name,
                    "lo_ms": edges[:-1][keep],
                    "width_ms": np.diff(edges)[keep],
                    "requests": counts[keep],
                    "fraction": counts[keep] / len(mine),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[LATENCY_COLUMNS]


def request_plot_data(requests: Requests | None) -> RequestPlotData | None:
    """The tables of a server's figures; None for a loop."""
    if requests is None:
        return None
    return RequestPlotData(
        over_time=requests_over_time(requests),
        latency=latency_distribution(requests),
        percentiles=requests.latency(),
    )


def report_plot_data(analysis: Analysis) -> ReportPlotData:
    """The tables of every figure of the report, for the pools the Analysis reports on."""
    run, window = analysis.run, analysis.window
    pools = [analysis.concurrency[Pool(p)] for p in analysis.pools["pool"]]
    queued = [Pool(p) for p in analysis.queue_delay["pool"]]
    return ReportPlotData(
        concurrency=concurrency_stack(pools),
        cores=run.manifest.usable_cpus,
        histograms=concurrency_histograms(pools),
        timeline=thread_timeline(
            run, window, min_gap_ns=(window[1] - window[0]) // TIMELINE_RESOLUTION
        ),
        queue_delay=queue_delay_distribution(run, queued, window),
        breakdown=breakdown_bars(analysis.breakdown, analysis.steps, window),
        requests=request_plot_data(analysis.requests),
        census=census_stack(analysis.census) if analysis.census else None,
        census_cpus=analysis.census.cpus if analysis.census else None,
    )
