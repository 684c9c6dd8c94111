"""The report's figures, drawn from the plot-ready tables an ``Analysis`` holds
(``metrics/figures.py`` computes them).

Drawing only: every number a figure shows is a column of those tables (tested there,
without matplotlib). Import this module lazily: it loads matplotlib. Figures are made
without pyplot (no global state, no GUI backend) and rendered to PNG with Agg. Text that
comes from the trace (thread names) is drawn with mathtext off, so a '$' in a thread name
is shown, not parsed as a formula (an unbalanced one would make drawing fail).

Margins are set from the measured width of the few texts that decide them (the longest label,
the legend), not by a layout engine: constrained layout measures every tick label of every
axis before drawing them, a third of the drawing time of a report. No tick label uses mathtext
either (a log axis is labelled 1, 10, 100 rather than 10^k): its parser's first use costs more
than a figure.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from tftrace.analysis.analyze import Analysis

WIDTH_IN = 11.0  # 1100 px at DPI: the report's content width
DPI = 100
POOL_COLOURS = {
    "inter-op": "#1f77b4",
    "intra-op": "#ff7f0e",
    "tf.data": "#2ca02c",
    "python-main": "#9467bd",
    "python-other": "#8c564b",
    "tf-other": "#7f7f7f",
    "blas/openmp": "#e377c2",
    "grpc/profiler": "#bcbd22",
    "other": "#17becf",
    "unmapped": "#c7c7c7",
    "python": "#9467bd",
    "tftrace": "#dbdb8d",
    "unknown": "#c7c7c7",
}
CATEGORY_COLOURS = {
    "intra-op parallel": "#2ca02c",
    "op, intra idle": "#1f77b4",
    "waiting for a thread": "#d62728",
    "dispatch & executor": "#ff7f0e",
    "python / host": "#9467bd",
    "idle": "#d9d9d9",
}
TIME_LABEL = "time since the start of the trace window (s)"
# Margins in pixels: title above, tick labels and axis label below, numeric y tick labels and
# axis label on the left, a little room on the right; a legend's handle and gaps.
TOP_PX, BOTTOM_PX, NUMERIC_LEFT_PX, RIGHT_PAD_PX, LEGEND_HANDLE_PX = 30, 48, 62, 12, 48
TICK_PAD_PX = 12  # a tick label's distance from its axis
BAR_HALF_HEIGHT = 0.4  # barh's default height, 0.8
Line = tuple[int, str] | None  # a dashed line across a figure: (y, label)


def pool_colour(pool: str) -> str:
    return POOL_COLOURS.get(pool, "#333333")


def _figure(height_in: float) -> Figure:
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _text_px(fig: Figure, texts: Iterable[str]) -> float:
    """The widest of ``texts`` in pixels, as drawn at the rc font size."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    font = FontProperties()
    widths = [renderer.get_text_width_height_descent(t, font, ismath=False)[0] for t in texts]
    return max(widths, default=0.0)


def _margins(
    fig: Figure,
    left_px: float,
    right_px: float = RIGHT_PAD_PX,
    top_px: float = TOP_PX,
    bottom_px: float = BOTTOM_PX,
    **spacing: float,
) -> None:
    """Place the axes: margins in pixels (a figure's size in pixels varies, text sizes do not)."""
    width, height = fig.get_size_inches() * DPI
    fig.subplots_adjust(
        left=left_px / width,
        right=1 - right_px / width,
        top=1 - top_px / height,
        bottom=bottom_px / height,
        **spacing,
    )


def _labels_px(fig: Figure, labels: Iterable[str]) -> float:
    """Room for tick labels to the left of the axes (the widest, its pad and a margin)."""
    return _text_px(fig, labels) + TICK_PAD_PX + RIGHT_PAD_PX


def _legend_px(fig: Figure, labels: Iterable[str]) -> float:
    """Room for a legend to the right of the axes (handle, gap and the widest label)."""
    return LEGEND_HANDLE_PX + _text_px(fig, labels) + RIGHT_PAD_PX


def _plain_log_axis(axis: Any) -> None:
    """Log-scale tick labels as plain numbers (1, 10, 100), not mathtext powers of ten."""
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_formatter(NullFormatter())


def _no_data(title: str, reason: str) -> Figure:
    """A small figure saying why there is nothing to draw (the page keeps its layout)."""
    fig = _figure(1.2)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, loc="left")
    ax.text(0.5, 0.4, reason, ha="center", va="center", color="#666666", parse_math=False)
    _margins(fig, RIGHT_PAD_PX, bottom_px=RIGHT_PAD_PX)
    return fig


def draw_concurrency(stack: pd.DataFrame, cores: int | None) -> Figure:
    """(a) Busy threads over time, pools stacked, against the number of schedulable CPUs."""
    title = "concurrency over time (mean busy threads per bin, stacked by pool)"
    line = (cores, f"{cores} cores") if cores else None
    return _stacked(stack, title, "busy threads", line, "no trace events in the window")


def draw_census(stack: pd.DataFrame | None, cpus: int | None) -> Figure:
    """Threads on a CPU (kernel CPU time, BLAS too), pools stacked, against the usable CPUs."""
    title = "threads on a CPU over time (mean per bin, stacked by pool; kernel CPU time)"
    line = (cpus, f"{cpus} CPUs") if cpus else None
    why = "no OS samples in the window (the OS sampler did not run)"
    return _stacked(
        pd.DataFrame() if stack is None else stack, title, "threads on a CPU", line, why
    )


def _stacked(stack: pd.DataFrame, title: str, ylabel: str, line: Line, why: str) -> Figure:
    """A pool per column of ``stack`` over ``t_s``, stacked, and a dashed ``line``."""
    pools = [c for c in stack.columns if c not in ("t_ns", "t_s")]
    if stack.empty or not pools:
        return _no_data(title, why)
    fig = _figure(3.8)
    ax = fig.add_subplot()
    ax.stackplot(
        stack["t_s"],
        *(stack[p] for p in pools),
        labels=pools,
        colors=[pool_colour(p) for p in pools],
        step="post",
        alpha=0.85,
    )
    if line:
        ax.axhline(line[0], color="black", linestyle="--", linewidth=1.2, label=line[1])
    ax.set_title(title, loc="left")
    ax.set_xlabel(TIME_LABEL)
    ax.set_ylabel(ylabel)
    ax.set_xlim(stack["t_s"].iloc[0], stack["t_s"].iloc[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    legend = [*pools, *([line[1]] if line else [])]
    _margins(fig, NUMERIC_LEFT_PX, _legend_px(fig, legend))
    return fig


def draw_histograms(histograms: pd.DataFrame) -> Figure:
    """(b) Per pool: the fraction of the window spent with 0, 1, ..., N threads busy."""
    title = "concurrency histograms: fraction of the window with N threads of the pool busy"
    if histograms.empty:
        return _no_data(title, "no pools to show")
    pools = list(dict.fromkeys(histograms["pool"]))
    fig = _figure(3.0)
    axes = fig.subplots(1, len(pools), sharey=True, squeeze=False)[0]
    for ax, pool in zip(axes, pools, strict=True):
        rows = histograms[histograms["pool"] == pool]
        ax.bar(rows["busy_threads"], rows["fraction"], color=pool_colour(pool), width=0.8)
        ax.set_title(pool)
        ax.set_xticks(rows["busy_threads"].to_list())
        ax.set_xlabel("busy threads")
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("fraction of the window")
    fig.suptitle(title, x=0.01, ha="left")
    _margins(fig, NUMERIC_LEFT_PX, top_px=2 * TOP_PX, wspace=0.12)
    return fig


def draw_timeline(timeline: pd.DataFrame) -> Figure:
    """(c) Busy intervals of every thread, one row each, coloured by pool."""
    title = "thread timeline: busy intervals (owning work, see docs) per thread"
    if timeline.empty:
        return _no_data(title, "no thread was busy in the window")
    rows = timeline.drop_duplicates("row").sort_values("row")
    fig = _figure(1.3 + 0.32 * len(rows))
    ax = fig.add_subplot()
    for row, part in timeline.groupby("row", sort=True):
        colour = pool_colour(str(part["pool"].iloc[0]))
        ax.broken_barh(
            list(zip(part["start_s"], part["width_s"], strict=True)),
            (float(row) - 0.38, 0.76),
            facecolors=colour,
            edgecolors=colour,
            linewidth=0.4,  # a hairline keeps sub-pixel intervals visible
        )
    _thread_axis(ax, rows)
    ax.set_title(title, loc="left")
    ax.set_xlabel(TIME_LABEL)
    ax.grid(axis="x", alpha=0.3)
    _margins(fig, _labels_px(fig, rows["label"]))
    return fig


def _thread_axis(ax: Axes, rows: pd.DataFrame) -> None:
    """Thread labels (from the trace: mathtext off), the first row at the top."""
    ax.set_yticks(rows["row"].to_list(), labels=rows["label"].to_list(), parse_math=False)
    for tick, pool in zip(ax.get_yticklabels(), rows["pool"], strict=True):
        tick.set_color(pool_colour(str(pool)))
    ax.set_ylim(len(rows) - 0.5, -0.5)


def draw_queue_delay(distribution: pd.DataFrame) -> Figure:
    """(d) Per pool: the distribution of queue delay (scheduled -> started), log-spaced bins."""
    title = "queue delay: share of each pool's closures per delay bin"
    if distribution.empty:
        return _no_data(title, "no closure has both Record and StartRegion in the trace")
    pools = list(dict.fromkeys(distribution["pool"]))
    fig = _figure(0.6 + 1.6 * len(pools))
    axes = fig.subplots(len(pools), 1, sharex=True, squeeze=False)[:, 0]
    for ax, pool in zip(axes, pools, strict=True):
        rows = distribution[distribution["pool"] == pool]
        ax.bar(
            rows["lo_us"],
            rows["fraction"],
            width=rows["width_us"],
            align="edge",
            color=pool_colour(pool),
        )
        ax.set_xscale("log")
        _plain_log_axis(ax.xaxis)
        ax.set_ylabel(pool)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("queue delay (us, log scale)")
    fig.suptitle(title, x=0.01, ha="left")
    _margins(fig, NUMERIC_LEFT_PX, hspace=0.25)
    return fig


def draw_breakdown(bars: pd.DataFrame) -> Figure:
    """(e) Where the wall time went: one stacked bar for the window, then one per step.

    Every segment is one rectangle of a single collection (a patch per segment, as ``barh``
    makes, took most of the report's drawing time), the legend made from the categories."""
    title = "where the wall time went (share of each bar)"
    labels = bars.drop_duplicates("bar").sort_values("bar")
    categories = [str(c) for c in bars["category"].unique()]
    fig = _figure(1.2 + 0.34 * len(labels))
    ax = fig.add_subplot()
    y = bars["bar"].to_numpy(dtype=float)
    x0 = bars["left"].to_numpy(dtype=float)
    x1 = x0 + bars["share"].to_numpy(dtype=float)
    low, high = y - BAR_HALF_HEIGHT, y + BAR_HALF_HEIGHT
    corners = np.stack([np.c_[x0, low], np.c_[x1, low], np.c_[x1, high], np.c_[x0, high]], axis=1)
    colours = [_category_colour(c) for c in bars["category"]]
    ax.add_collection(PolyCollection(list(corners), facecolors=colours, edgecolors="none"))
    for r in bars[bars["share"] >= 0.06].itertuples():
        ax.text(r.mid, r.bar, f"{r.share:.0%}", ha="center", va="center", fontsize=8)
    ax.set_yticks(labels["bar"].to_list(), labels=labels["label"].to_list(), parse_math=False)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter("{x:.0%}")
    ax.set_title(title, loc="left")
    handles = [Patch(color=_category_colour(c), label=c) for c in categories]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    _margins(fig, _labels_px(fig, labels["label"]), _legend_px(fig, categories))
    return fig


REQUEST_COLOUR = "#1f77b4"
ENDED_COLOUR = "#2ca02c"
PERCENTILE_STYLES = {"p50_ms": ":", "p90_ms": "--", "p99_ms": "-."}


def draw_requests_in_flight(over_time: pd.DataFrame) -> Figure:
    """(f) A server's requests over its window: in flight (mean per bin) above, the requests
    that ended per second of each bin below."""
    title = "requests over time: in flight (mean per bin) and ended per second"
    if over_time.empty:
        return _no_data(title, "no request in the window")
    fig = _figure(4.2)
    top, bottom = fig.subplots(2, 1, sharex=True)
    t = over_time["t_s"].to_numpy()
    width = float(t[1] - t[0]) if len(t) > 1 else 1.0
    edges = np.r_[t, t[-1] + width]
    flight = over_time["in_flight"].to_numpy()
    top.stairs(flight, edges, color=REQUEST_COLOUR, fill=True, alpha=0.8)
    top.set_ylabel("in flight")
    top.set_ylim(bottom=0)
    top.set_title(title, loc="left")
    bottom.stairs(over_time["completed_per_s"].to_numpy(), edges, color=ENDED_COLOUR, fill=True)
    bottom.set_ylabel("ended / s")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel(TIME_LABEL)
    bottom.set_xlim(edges[0], edges[-1])
    for ax in (top, bottom):
        ax.grid(axis="y", alpha=0.3)
    _margins(fig, NUMERIC_LEFT_PX + 8, hspace=0.12)
    return fig


def draw_request_latency(latency: pd.DataFrame, percentiles: pd.DataFrame) -> Figure:
    """(g) A server's request latency: the share of requests per log-spaced bin (per function
    where there are several), with p50, p90 and p99 of all requests."""
    title = "request latency: share of requests per latency bin"
    if latency.empty:
        return _no_data(title, "no request in the window")
    functions = list(dict.fromkeys(latency["function"].astype(str)))
    fig = _figure(3.2)
    ax = fig.add_subplot()
    colours = [REQUEST_COLOUR, *POOL_COLOURS.values()]
    for i, function in enumerate(functions):
        rows = latency[latency["function"].astype(str) == function]
        ax.bar(
            rows["lo_ms"],
            rows["fraction"],
            width=rows["width_ms"],
            align="edge",
            color=colours[i % len(colours)],
            alpha=0.85 if len(functions) == 1 else 0.5,
            label=function if len(functions) > 1 else None,
        )
    every = percentiles[percentiles["function"].astype(str) == "all"]
    labels = list(functions) if len(functions) > 1 else []
    for column, style in PERCENTILE_STYLES.items():
        value = every[column].iloc[0] if len(every) else None
        if value is not None and np.isfinite(value) and value > 0:
            name = f"{column.removesuffix('_ms')} {value:.2f} ms"
            ax.axvline(value, color="black", linestyle=style, linewidth=1.1, label=name)
            labels.append(name)
    ax.set_xscale("log")
    _plain_log_axis(ax.xaxis)
    lo = float(latency["lo_ms"].min())
    hi = float((latency["lo_ms"] + latency["width_ms"]).max())
    ax.set_xlim(lo, hi)
    ax.set_xticks(_one_two_five(lo, hi))
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("share of requests")
    ax.set_ylim(bottom=0)
    ax.set_title(title, loc="left")
    ax.grid(alpha=0.3)
    legend = ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    for text in legend.get_texts():
        text.set_parse_math(False)  # function names come from the trace
    _margins(fig, NUMERIC_LEFT_PX, _legend_px(fig, labels or [""]))
    return fig


def _one_two_five(lo: float, hi: float) -> list[float]:
    """Ticks 1, 2, 5, 10, 20, ... between ``lo`` and ``hi``: a log axis of less than a few
    decades has one or two powers of ten, too few to read it by."""
    first, last = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    ticks = [m * 10.0**k for k in range(first, last + 1) for m in (1, 2, 5)]
    return [round(t, 12) for t in ticks if lo <= t <= hi]


def request_figures(analysis: Analysis) -> dict[str, Figure]:
    """A server's figures by name; none for a loop."""
    over_time, latency = analysis.requests_over_time, analysis.latency_distribution
    if analysis.requests is None or over_time is None or latency is None:
        return {}
    return {
        "requests_in_flight": draw_requests_in_flight(over_time),
        "request_latency": draw_request_latency(latency, analysis.requests.latency()),
    }


def _category_colour(category: object) -> str:
    return CATEGORY_COLOURS.get(str(category), "#333333")


def report_figures(analysis: Analysis) -> dict[str, Figure]:
    """Every figure of the report by name (the name is also its PNG's file name)."""
    census_cpus = analysis.census.cpus if analysis.census else None
    return {
        "concurrency": draw_concurrency(
            analysis.concurrency_over_time, analysis.run.manifest.usable_cpus
        ),
        "census": draw_census(analysis.census_over_time, census_cpus),
        "histograms": draw_histograms(analysis.concurrency_histograms),
        "timeline": draw_timeline(analysis.thread_timeline),
        "queue_delay": draw_queue_delay(analysis.queue_delay_distribution),
        "breakdown": draw_breakdown(analysis.breakdown_bars),
        **request_figures(analysis),
    }


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG, without matplotlib's 'Software' tag (it holds a URL)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def png_images(analysis: Analysis) -> dict[str, bytes]:
    """Every figure of the report as PNG bytes, by name (the report and TensorBoard use it)."""
    return {name: png_bytes(fig) for name, fig in report_figures(analysis).items()}
