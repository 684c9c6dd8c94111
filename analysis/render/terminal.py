"""``tftrace analyze`` in the terminal: the findings, then each table of an ``Analysis``.

Nothing is computed here: ``tftrace.analysis.analyze`` did that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tftrace.analysis.render import python_text, requests_text
from tftrace.analysis.render.console import capture, say
from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.core_use_text import (
    beside_lines,
    cause_table,
    headline,
    not_checked_lines,
)
from tftrace.analysis.render.report_tables import (
    breakdown_table,
    census_table,
    cpu_table,
    ops_table,
    pools_table,
    python_table,
    queue_delay_table,
    request_tables,
)
from tftrace.analysis.render.table import print_table
from tftrace.analysis.render.window_text import (
    profiler_cost_line,
    step_summary_lines,
    steps_line,
    warmup_line,
    window_line,
)

if TYPE_CHECKING:
    from rich.console import Console

    from tftrace.analysis.analyze import Analysis
    from tftrace.analysis.findings import Finding


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
        if f.predicted:
            say(console, f"  predicted from the trace: {f.predicted.label()}")
        if f.verification:
            said = f"  verified: {f.verification.status.value}: {f.verification.reason}"
            say(console, said)


def render(analysis: Analysis, out: Console | None = None) -> None:
    """Print the analysis (findings first, then every table) on ``out`` (default: stdout)."""
    console = out or make_console()
    say(console, f"{analysis.run.path}  {window_line(analysis)}")
    for line in (warmup_line(analysis), profiler_cost_line(analysis)):
        if line:
            say(console, line)
    _render_requests(console, analysis)
    _render_core_use(console, analysis)
    _render_findings(console, analysis.findings)
    for line in not_checked_lines(analysis):
        say(console, line)
    print_table(console, pools_table(analysis))
    _render_census(console, analysis)
    for table in (queue_delay_table(analysis), cpu_table(analysis), breakdown_table(analysis)):
        print_table(console, table)
    _render_python(console, analysis)
    print_table(console, ops_table(analysis))
    steps = steps_line(analysis)
    if steps:
        say(console, steps)
    for line in step_summary_lines(analysis):
        say(console, f"  {line}")
    for line in analysis.run.missing:
        say(console, f"missing: {line}")


def _render_census(console: Console, analysis: Analysis) -> None:
    """Every thread by pool against the usable CPUs, then where each size came from (library
    names and environment values, the run's own strings: printed as plain text, no markup)."""
    table = census_table(analysis)
    if table is not None:
        print_table(console, table)


def _render_requests(console: Console, analysis: Analysis) -> None:
    """A server's requests, over the window of the line above: how many, requests/s, in
    flight, latency per function and where a request's time went. Nothing for a loop."""
    requests = analysis.requests
    if requests is None:
        return
    for line in requests_text.summary_lines(analysis):
        say(console, line)
    for table in request_tables(analysis):
        print_table(console, table)


def _render_core_use(console: Console, analysis: Analysis) -> None:
    """The headline first: cores busy, the idle core-time by cause, the most settings gain."""
    use = analysis.core_use
    if use is None:
        return
    for line in headline(analysis):
        say(console, line)
    causes = cause_table(analysis)
    if causes:
        print_table(console, causes)
    for line in beside_lines(analysis):
        say(console, line)
    for line in use.notes:
        say(console, f"({line})")


def _render_python(console: Console, analysis: Analysis) -> None:
    """Which Python functions took the time, where Python time matters (else one line)."""
    python, table = analysis.python_time, python_table(analysis)
    if python is None or table is None:
        line = python_text.not_shown(analysis)
        if line:
            say(console, line)
        return
    print_table(console, table)
    for text in [*python_text.other_thread_lines(analysis), *python_text.notes(analysis)]:
        say(console, text)
