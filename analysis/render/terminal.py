"""``tftrace analyze`` in the terminal: the findings, then each table of an ``Analysis``.

Nothing is computed here: ``tftrace.analysis.analyze`` did that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tftrace.analysis.render import census_text, python_text, requests_text
from tftrace.analysis.render.console import capture, say
from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.console import table as plain_table
from tftrace.analysis.render.core_use_text import HEADERS as CORE_USE_HEADERS
from tftrace.analysis.render.core_use_text import (
    beside_lines,
    cause_rows,
    headline,
    not_checked_lines,
)
from tftrace.analysis.render.formatting import (
    POOL_HEADERS,
    fmt,
    parallelism_text,
    pool_rows,
)
from tftrace.analysis.render.window_text import (
    step_summary_lines,
    steps_line,
    warmup_line,
    window_line,
)

if TYPE_CHECKING:
    from rich.console import Console

    from tftrace.analysis.analyze import Analysis
    from tftrace.analysis.findings import Finding


def _table(
    title: str, columns: tuple[str, ...], left: int = 1, text_at: tuple[int, ...] = ()
) -> Any:
    """A rich table whose first ``left`` columns (and those at ``text_at``) are text, the others
    right-aligned figures; every title, header and cell shown as text (``console.table``)."""
    table = plain_table(title, title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i < left or i in text_at else "right")
    return table


def render_text(analysis: Analysis) -> str:
    """The terminal report as plain text (what ``print(analysis)`` shows)."""
    return capture(lambda out: render(analysis, out))


def _render_findings(console: Console, findings: Sequence[Finding]) -> None:
    if not findings:
        say(console, "findings: none")
        return
    from rich.text import Text

    console.print(Text.assemble(("findings", "bold"), " (causes first, then most severe first)"))
    for f in findings:
        where = f" [{f.pool}]" if f.pool else ""
        # a finding's words carry names from the run (a process's, a library's): shown, not obeyed
        say(console, f"- {f.severity.value.upper()}{where} {f.message}")
        say(console, f"  -> {f.action}")
        if f.consequence_of:
            say(console, f"  (a consequence of {', '.join(f.consequence_of)}: act on that first)")
        if f.verification:
            said = f"  verified: {f.verification.status.value}: {f.verification.reason}"
            say(console, said)


def render(analysis: Analysis, out: Console | None = None) -> None:
    """Print the analysis (findings first, then every table) on ``out`` (default: stdout)."""
    console = out or make_console()
    say(console, f"{analysis.run.path}  {window_line(analysis)}")
    warmup = warmup_line(analysis.warmup)
    if warmup:
        say(console, warmup)
    _render_requests(console, analysis)
    _render_core_use(console, analysis)
    _render_findings(console, analysis.findings)
    for line in not_checked_lines(analysis):
        say(console, line)
    pools = _table("pools (busy = owning work, see docs)", POOL_HEADERS)
    for cells in pool_rows(analysis.pools):
        pools.add_row(*cells)
    console.print(pools)
    _render_census(console, analysis)
    queue = _table(
        "queue delay: scheduled -> started (us)",
        ("pool", "closures", "p50", "p90", "p99", "max", "total ms"),
    )
    for r in analysis.queue_delay.itertuples():
        queue.add_row(
            r.pool,
            str(r.closures),
            fmt(r.p50_us, ".1f"),
            fmt(r.p90_us, ".1f"),
            fmt(r.p99_us, ".1f"),
            fmt(r.max_us, ".1f"),
            fmt(r.total_ms, ".2f"),
        )
    console.print(queue)
    cpu = _table(
        "CPU truth (OS) vs traced busy time (s)",
        ("pool", "threads", "CPU", "busy", "CPU/busy", "run-queue wait"),
    )
    for r in analysis.cpu.itertuples():
        cpu.add_row(
            r.pool,
            str(r.threads),
            fmt(r.cpu_s, ".3f"),
            fmt(r.busy_s, ".3f"),
            fmt(r.cpu_per_busy, ".2f"),
            fmt(r.wait_s, ".3f"),
        )
    console.print(cpu)
    console.print(_breakdown_table(analysis))
    _render_python(console, analysis)
    console.print(_ops_table(analysis))
    steps = steps_line(analysis.steps)
    if steps:
        say(console, steps)
    for line in step_summary_lines(analysis.steps.summary()):
        say(console, f"  {line}")
    for line in analysis.run.missing:
        say(console, f"missing: {line}")


def _render_census(console: Console, analysis: Analysis) -> None:
    """Every thread by pool against the usable CPUs, then where each size came from (library
    names and environment values, the run's own strings: printed as plain text, no markup)."""
    census = analysis.census
    if census is None:
        return
    table = _table(census_text.title(census), census_text.FIGURE_HEADERS)
    for cells in census_text.figure_rows(census):
        table.add_row(*cells)
    console.print(table)
    for line in [*census_text.source_lines(census), *census_text.summary_lines(census)]:
        say(console, line)


def _render_requests(console: Console, analysis: Analysis) -> None:
    """A server's requests, over the window of the line above: how many, requests/s, in
    flight, latency per function and where a request's time went. Nothing for a loop."""
    requests = analysis.requests
    if requests is None:
        return
    for line in requests_text.summary_lines(analysis):
        say(console, line)
    latency = _table(requests_text.LATENCY_TITLE, requests_text.LATENCY_HEADERS)
    for cells in requests_text.latency_rows(requests):
        latency.add_row(*cells)
    console.print(latency)
    parts = _table(requests_text.BREAKDOWN_TITLE, requests_text.BREAKDOWN_HEADERS)
    for cells in requests_text.breakdown_rows(requests):
        parts.add_row(*cells)
    console.print(parts)


def _render_core_use(console: Console, analysis: Analysis) -> None:
    """The headline first: cores busy, the idle core-time by cause, the most settings gain."""
    use = analysis.core_use
    if use is None:
        return
    for line in headline(use):
        say(console, line)
    rows = cause_rows(use)
    if rows:
        table = _table("", CORE_USE_HEADERS)
        for cells in rows:
            table.add_row(*cells)
        console.print(table)
    for line in beside_lines(analysis):
        say(console, line)
    for line in use.notes:
        say(console, f"({line})")


def _breakdown_table(analysis: Analysis) -> Any:
    table = _table(
        "where the wall time went (see docs for each category)", ("category", "ms", "share")
    )
    for r in analysis.breakdown.itertuples():
        table.add_row(r.category, f"{r.ns / 1e6:.1f}", f"{r.share:.1%}")
    return table


def _render_python(console: Console, analysis: Analysis) -> None:
    """Which Python functions took the time, where Python time matters (else one line)."""
    python = analysis.python_time
    line = python_text.not_shown(analysis)
    if python is None or line is not None:
        if line:
            say(console, line)
        return
    table = _table(python_text.title(python), python_text.HEADERS)
    for cells in python_text.main_rows(python):
        table.add_row(*cells)
    console.print(table)
    for text in [*python_text.other_thread_lines(python), *python_text.notes(python)]:
        say(console, text)


def _ops_table(analysis: Analysis) -> Any:
    table = _table(
        "top op types by time (parallelism = Eigen workers busy for it; inline = none)",
        ("op type", "count", "total ms", "mean us", "parallelism"),
    )
    for r in analysis.top_ops.itertuples():
        table.add_row(
            str(r.op_type)[:40],
            str(r.count),
            f"{r.total_ms:.2f}",
            f"{r.mean_us:.1f}",
            parallelism_text(r.parallelism),
        )
    return table
