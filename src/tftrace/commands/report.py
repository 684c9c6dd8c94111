"""``tftrace report RUN [-o FILE]``: the analyses of a run as one self-contained HTML page.

The page (default ``RUN/report.html``) holds the run summary, findings, every table of
``tftrace analyze`` and five figures embedded as base64 PNG (seven for a server: its requests
in flight and their latency, with a Requests section); it needs no network. The same
figures are written as PNG files into a folder named after the page, beside it
(``report.html`` -> ``report_files/concurrency.png``, ...), for slides and issues.

Figures and findings come from ``tftrace.analysis.analyze.analyze``: the page only shows them;
``analysis.render.report_files`` writes it.

``tftrace report DIR`` on a directory of hosts (``tftrace record -o DIR/{task}``): each host's
own report as above (``DIR/<host>/report.html``), and one page of the cross-host view
(default ``DIR/report.html``) that links to them: ``analysis.cluster.reports.report_cluster``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tftrace.analysis.render.report_files import (  # light; tests and callers take them here
    DEFAULT_NAME,
    ReportFiles,
    output_paths,
    write_report,
)
from tftrace.commands import (
    add_analysis_arguments,
    analysis_options,
    analyze_run,
    path_kind,
    refuse_for_hosts,
)

NAME = "report"
HELP = "write a self-contained HTML report of a run (tables, findings, figures; works offline)"
__all__ = ["DEFAULT_NAME", "ReportFiles", "configure", "output_paths", "run", "write_report"]


def configure(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, "the report's figures and findings cover")
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help=f"the HTML file to write (default: RUN/{DEFAULT_NAME}; a directory: "
        f"{DEFAULT_NAME} in it); the figures go to FILE's name + _files/ beside it",
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.report_files import report_run

    if path_kind(NAME, ns.run, ("run", "hosts")) == "hosts":
        return _cluster(ns)
    analysis = analyze_run(ns)
    files = report_run(analysis, ns.output)
    print(f"tftrace: report {files.page} ({len(files.images)} figures also in {files.image_dir}/)")
    return 0


def _cluster(ns: argparse.Namespace) -> int:
    """Each host's report and the job's page linking them, every host analysed with the
    options one run takes (--window, --warmup-steps, --cpus)."""
    from tftrace.analysis.cluster.reports import report_cluster
    from tftrace.analysis.render.formatting import printable

    refuse_for_hosts(NAME, ns, "session")
    done = report_cluster(ns.run, ns.output, **analysis_options(ns))
    print(f"tftrace: report {done.page} ({len(done.cluster.hosts)} hosts)")
    for host in done.cluster.hosts:
        name = host.name
        shown = done.links[name] if name in done.links else f"no report: {done.problems[name]}"
        print(printable(f"  {name}: {shown}"))  # host names, problems: the job's text
    return 0
