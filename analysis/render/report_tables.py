"""The single-run report's tables as ``Table`` values (``table.py``), built once from an
``Analysis`` and drawn by the terminal (``terminal.py``) and the page (``html_sections.py``).

Where the two show a table differently, a parameter says how: the page has no table titles
(its sections have headings), so its headers carry the units the terminal's title gives, and
it shows names whole where the terminal's 100 columns cut them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.render import census_text, python_text, requests_text
from tftrace.analysis.render.formatting import POOL_HEADERS, fmt, parallelism_text, pool_rows
from tftrace.analysis.render.table import Table

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

MAX_OP_CHARS = 40  # the terminal's op type column


def pools_table(analysis: Analysis) -> Table:
    rows = pool_rows(analysis.pools)
    return Table("pools (busy = owning work, see docs)", POOL_HEADERS, rows, draw_empty=True)


def queue_delay_table(analysis: Analysis, units_in_headers: bool = False) -> Table:
    unit = " us" if units_in_headers else ""
    headers = ("pool", "closures", *(f"{p}{unit}" for p in ("p50", "p90", "p99", "max")))
    rows = [
        (
            str(r.pool),
            str(r.closures),
            *(fmt(v, ".1f") for v in (r.p50_us, r.p90_us, r.p99_us, r.max_us)),
            fmt(r.total_ms, ".2f"),
        )
        for r in analysis.queue_delay.itertuples()
    ]
    title = "queue delay: scheduled -> started (us)"
    return Table(title, (*headers, "total ms"), rows, draw_empty=True)


def cpu_table(analysis: Analysis, units_in_headers: bool = False) -> Table:
    headers = (
        ("pool", "threads", "CPU s", "busy s", "CPU / busy", "run-queue wait s")
        if units_in_headers
        else ("pool", "threads", "CPU", "busy", "CPU/busy", "run-queue wait")
    )
    rows = [
        (
            str(r.pool),
            str(r.threads),
            fmt(r.cpu_s, ".3f"),
            fmt(r.busy_s, ".3f"),
            fmt(r.cpu_per_busy, ".2f"),
            fmt(r.wait_s, ".3f"),
        )
        for r in analysis.cpu.itertuples()
    ]
    return Table("CPU truth (OS) vs traced busy time (s)", headers, rows, draw_empty=True)


def breakdown_table(analysis: Analysis) -> Table:
    rows = [
        (str(r.category), f"{r.ns / 1e6:.1f}", f"{r.share:.1%}")
        for r in analysis.breakdown.itertuples()
    ]
    title = "where the wall time went (see docs for each category)"
    return Table(title, ("category", "ms", "share"), rows, draw_empty=True)


def ops_table(analysis: Analysis, shorten: bool = True) -> Table:
    rows = [
        (
            str(r.op_type)[:MAX_OP_CHARS] if shorten else str(r.op_type),
            str(r.count),
            f"{r.total_ms:.2f}",
            f"{r.mean_us:.1f}",
            parallelism_text(r.parallelism),
        )
        for r in analysis.top_ops.itertuples()
    ]
    title = "top op types by time (parallelism = Eigen workers busy for it; inline = none)"
    headers = ("op type", "count", "total ms", "mean us", "parallelism")
    return Table(title, headers, rows, draw_empty=True)


def census_table(analysis: Analysis, with_sources: bool = False) -> Table | None:
    """Threads by pool against the CPUs; ``with_sources``: where each size came from as a
    column (the page), else as lines after the table (the terminal). None without a census."""
    census = analysis.census
    if census is None:
        return None
    title = census_text.title(analysis)
    if with_sources:
        rows = census_text.rows(analysis)
        return Table(title, census_text.HEADERS, rows, text_at=(census_text.SOURCE,))
    lines = (*census_text.source_lines(analysis), *census_text.summary_lines(analysis))
    rows = census_text.figure_rows(analysis)
    return Table(title, census_text.FIGURE_HEADERS, rows, notes=lines, draw_empty=True)


def python_table(analysis: Analysis, shorten: bool = True) -> Table | None:
    """The main thread's top Python functions; None where the table is not shown."""
    python = analysis.python_time
    if python is None or python_text.not_shown(analysis) is not None:
        return None
    rows = python_text.main_rows(analysis, shorten=shorten)
    return Table(python_text.title(analysis), python_text.HEADERS, rows, draw_empty=True)


def request_tables(analysis: Analysis) -> list[Table]:
    """A server's latency per function (ms) and where a request's time went; none for a loop."""
    if analysis.requests is None:
        return []
    return [
        Table(
            requests_text.LATENCY_TITLE,
            requests_text.LATENCY_HEADERS,
            requests_text.latency_rows(analysis),
            draw_empty=True,
        ),
        Table(
            requests_text.BREAKDOWN_TITLE,
            requests_text.BREAKDOWN_HEADERS,
            requests_text.breakdown_rows(analysis),
            draw_empty=True,
        ),
    ]
