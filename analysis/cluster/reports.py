"""``report_cluster(DIR)``: the report of a multi-host job (``tftrace report DIR``): each host's
own report (``DIR/<host>/report.html``, as ``tftrace report`` writes one run's), and one page of
the cross-host view (default ``DIR/report.html``: hosts and how they ended, step time per
worker, the straggler, findings, clocks, pools side by side) that links to them.

Each host is loaded and analysed once, in parallel (``on_each_host``): the same analysis
writes the host's report and becomes its ``HostSummary`` for the cross-host view.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

from tftrace.analysis.cluster.analyze import ClusterAnalysis, cross_host, on_each_host
from tftrace.analysis.cluster.host import HostSummary, analyse_into, failed, summary_of
from tftrace.analysis.cluster.layout import find_hosts
from tftrace.analysis.cluster.report import cluster_page
from tftrace.analysis.render.report_files import cannot_write, output_paths, write_report
from tftrace.tracer.safe_files import safe_dir, write_text_atomic


class HostReport(NamedTuple):
    """A host's summary, and its report's page or why it has none (one line)."""

    summary: HostSummary
    page: str | None
    problem: str | None


def report_host(
    name: str, path: str, window: str, warmup_steps: int, cpus: int | None
) -> HostReport:
    """Load and analyse one host's run once (in a worker process), write its report from
    that analysis and summarise it; a host that cannot be analysed or written says why."""
    base: dict[str, Any] = {"name": name, "path": path}
    try:
        analysis = analyse_into(base, window, warmup_steps, cpus)
        if isinstance(analysis, str):
            summary = HostSummary(**base, error=f"no trace to analyse ({analysis})")
            return HostReport(summary, None, f"no trace to report ({analysis})")
    except Exception as e:
        return HostReport(failed(base, e), None, _problem(e, path))
    try:
        page: str | None = str(write_report(analysis, *output_paths(None, analysis.run.path)).page)
        problem = None
    except Exception as e:  # one host's report not written must not lose the others'
        page, problem = None, _problem(e, path)
    try:
        summary = summary_of(base, analysis)
    except Exception as e:
        summary = failed(base, e)
    return HostReport(summary, page, problem)


def _problem(e: Exception, path: str) -> str:
    from tftrace.errors import TftraceError

    if isinstance(e, TftraceError):
        return str(e)
    if isinstance(e, OSError):
        return f"{e.filename or path}: cannot write ({e.strerror})"
    return f"{type(e).__name__}: {e}"


@dataclass(frozen=True)
class ClusterReport:
    """What ``report_cluster`` wrote: the job's ``page``, its ``cluster`` view, ``links``
    (host -> its report's address relative to the page) and ``problems`` (host -> why it has
    no report)."""

    page: Path
    cluster: ClusterAnalysis
    links: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def report_cluster(
    path: str | os.PathLike[str],
    output: Path | None = None,
    *,
    window: str = "steady",
    warmup_steps: int = 1,
    cpus: int | None = None,
    executor: Executor | None = None,
) -> ClusterReport:
    """Write each host's report and the job's page that links them.

    Args:
        path: a directory of host run directories (``tftrace record -o DIR/{task}``).
        output: the job's page (default ``DIR/report.html``; a directory: ``report.html`` in
            it). Each host's report goes to its own directory, as for one run.
        window, warmup_steps, cpus: each host's, as for ``tftrace.analyze``.
        executor: where the hosts are analysed (as for ``analyze_cluster``).

    Raises:
        NotAClusterDir when the directory holds no host's run; a bad window before any work;
        ``ReportWriteError`` (a ``TftraceError``) when the page cannot be written.
    """
    from tftrace.analysis.metrics.window import parse_window

    parse_window(window, warmup_steps)  # a bad window: one line, before any work
    layout = find_hosts(path)
    page = output_paths(output, layout.path)[0]
    done = on_each_host(layout, report_host, (window, warmup_steps, cpus), executor)
    cluster = cross_host(layout.path, [d.summary for d in done], layout.missing)
    links, problems = {}, {}
    for host, d in zip(layout.hosts, done, strict=True):
        if d.page is not None:
            links[host.name] = quote(os.path.relpath(d.page, page.parent.resolve()))
        else:
            problems[host.name] = d.problem or "not written"
    with cannot_write(page):
        safe_dir(page.parent)
        write_text_atomic(page, cluster_page(cluster, links, problems))
    return ClusterReport(page, cluster, links, problems)
