"""The report's figures, drawn from the plot-ready tables of ``figure_data.py``.

Drawing only: every number a figure shows is a column of those tables (tested there,
without matplotlib). Import this module lazily: it loads matplotlib. Figures are made
without pyplot (no global state, no GUI backend) and rendered to PNG with Agg. Text that
comes from the trace (thread names) is drawn with mathtext off, so a '$' in a thread name
is shown, not parsed as a formula (an unbalanced one would make drawing fail).
"""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tftrace.analysis.analyze import Analysis
from tftrace.analysis.render.figure_data import ReportPlotData, report_plot_data

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


def pool_colour(pool: str) -> str:
    return POOL_COLOURS.get(pool, "#333333")


def _figure(height_in: float) -> Figure:
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _no_data(title: str, reason: str) -> Figure:
    """A small figure saying why there is nothing to draw (the page keeps its layout)."""
    fig = _figure(1.2)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title, loc="left")
    ax.text(0.5, 0.4, reason, ha="center", va="center", color="#666666", parse_math=False)
    return fig


def draw_concurrency(stack: pd.DataFrame, cores: int | None) -> Figure:
    """(a) Busy threads over time, pools stacked, against the number of schedulable CPUs."""
    title = "concurrency over time (mean busy threads per bin, stacked by pool)"
    pools = [c for c in stack.columns if c not in ("t_ns", "t_s")]
    if stack.empty or not pools:
        return _no_data(title, "no trace events in the window")
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
    if cores:
        ax.axhline(cores, color="black", linestyle="--", linewidth=1.2, label=f"{cores} cores")
    ax.set_title(title, loc="left")
    ax.set_xlabel(TIME_LABEL)
    ax.set_ylabel("busy threads")
    ax.set_xlim(stack["t_s"].iloc[0], stack["t_s"].iloc[-1])
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
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
        ax.set_ylabel(pool)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("queue delay (us, log scale)")
    fig.suptitle(title, x=0.01, ha="left")
    return fig


def draw_breakdown(bars: pd.DataFrame) -> Figure:
    """(e) Where the wall time went: one stacked bar for the window, then one per step."""
    title = "where the wall time went (share of each bar)"
    labels = bars.drop_duplicates("bar").sort_values("bar")
    fig = _figure(1.2 + 0.34 * len(labels))
    ax = fig.add_subplot()
    for category, part in bars.groupby("category", sort=False):
        colour = CATEGORY_COLOURS.get(str(category), "#333333")
        ax.barh(part["bar"], part["share"], left=part["left"], color=colour, label=category)
        for r in part[part["share"] >= 0.06].itertuples():
            ax.text(r.mid, r.bar, f"{r.share:.0%}", ha="center", va="center", fontsize=8)
    ax.set_yticks(labels["bar"].to_list(), labels=labels["label"].to_list(), parse_math=False)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter("{x:.0%}")
    ax.set_title(title, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return fig


def report_figures(data: ReportPlotData) -> dict[str, Figure]:
    """Every figure of the report by name (the name is also its PNG's file name)."""
    return {
        "concurrency": draw_concurrency(data.concurrency, data.cores),
        "histograms": draw_histograms(data.histograms),
        "timeline": draw_timeline(data.timeline),
        "queue_delay": draw_queue_delay(data.queue_delay),
        "breakdown": draw_breakdown(data.breakdown),
    }


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG, without matplotlib's 'Software' tag (it holds a URL)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def png_images(analysis: Analysis) -> dict[str, bytes]:
    """Every figure of the report as PNG bytes, by name (the report and TensorBoard use it)."""
    return {
        name: png_bytes(fig) for name, fig in report_figures(report_plot_data(analysis)).items()
    }
