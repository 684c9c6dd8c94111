"""``tftrace report RUN [-o FILE]``: the analyses of a run as one self-contained HTML page.

The page (default ``RUN/report.html``) holds the run summary, findings, every table of
``tftrace analyze`` and five figures embedded as base64 PNG (seven for a server: its requests
in flight and their latency, with a Requests section); it needs no network. The same
figures are written as PNG files into a folder named after the page, beside it
(``report.html`` -> ``report_files/concurrency.png``, ...), for slides and issues.

Figures and findings come from ``tftrace.analysis.analyze.analyze``: the page only shows them.

``tftrace report DIR`` on a directory of hosts (``tftrace record -o DIR/{task}``): each host's
own report as above (``DIR/<host>/report.html``), and one page of the cross-host view
(default ``DIR/report.html``: hosts and how they ended, step time per worker, the straggler,
findings, clocks, pools side by side) that links to them. Hosts are analysed in parallel.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.commands import add_analysis_arguments, analyze_run
from tftrace.errors import CliError
from tftrace.tracer.safe_files import (
    UnsafePathError,
    safe_dir,
    write_bytes_atomic,
    write_text_atomic,
)

NAME = "report"
HELP = "write a self-contained HTML report of a run (tables, findings, figures; works offline)"
DEFAULT_NAME = "report.html"


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


@dataclass(frozen=True)
class ReportFiles:
    page: Path
    images: list[Path]


def output_paths(output: Path | None, run_path: Path) -> tuple[Path, Path]:
    """(the HTML page, the folder of its PNGs): ``x.html`` -> ``x_files/`` beside it."""
    page = output if output is not None else run_path / DEFAULT_NAME
    if page.is_dir():
        page = page / DEFAULT_NAME
    return page, page.with_name(page.stem + "_files")


def write_report(analysis: Any, page: Path, image_dir: Path) -> ReportFiles:
    """Draw the figures, write them as PNG files and the page that embeds them.

    Nothing is written through a symbolic link (a shared run may hold planted ones): the
    page's folder and the figures' must not be links (``UnsafePathError``), and a link where
    a file goes is replaced by the file (``tftrace.tracer.safe_files``)."""
    from tftrace.analysis.render.html import render_page
    from tftrace.analysis.render.plots import png_images

    images = png_images(analysis)
    safe_dir(page.parent)
    safe_dir(image_dir)
    written = []
    for name, png in images.items():
        path = image_dir / f"{name}.png"
        write_bytes_atomic(path, png)
        written.append(path)
    relative = image_dir.name if image_dir.parent == page.parent else str(image_dir)
    write_text_atomic(page, render_page(analysis, images, relative))
    return ReportFiles(page, written)


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.cluster.layout import is_cluster_dir

    if is_cluster_dir(ns.run):
        return _cluster(ns)
    analysis = analyze_run(ns)
    page, image_dir = output_paths(ns.output, analysis.run.path)
    try:
        files = write_report(analysis, page, image_dir)
    except UnsafePathError:
        raise  # its own line says which link and why
    except OSError as e:
        raise CliError(f"{e.filename or page}: cannot write ({e.strerror})") from None
    print(f"tftrace: report {files.page} ({len(files.images)} figures also in {image_dir}/)")
    return 0


def host_report(path: str, window: str, warmup_steps: int) -> tuple[str | None, str | None]:
    """One host's report at ``<host>/report.html`` (run in a worker process): (its page, None),
    or (None, why there is none, in one line)."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.model.run import load
    from tftrace.errors import TftraceError

    try:
        run = load(Path(path))
        if run.xplane is None or run.events.empty:
            return None, f"no trace to report ({'; '.join(run.missing) or 'no trace events'})"
        analysis = analyze(run, window=window, warmup_steps=warmup_steps)
        page, image_dir = output_paths(None, run.path)
        return str(write_report(analysis, page, image_dir).page), None
    except TftraceError as e:
        return None, str(e)
    except OSError as e:
        return None, f"{e.filename or path}: cannot write ({e.strerror})"
    except Exception as e:  # one host's bad data must not lose the others' reports
        return None, f"{type(e).__name__}: {e}"


def _cluster(ns: argparse.Namespace) -> int:
    """Each host's report, in parallel with the cross-host view, and the page linking them."""
    import os
    from urllib.parse import quote

    from tftrace.analysis.cluster.analyze import cross_host, default_executor
    from tftrace.analysis.cluster.host import summarize_host
    from tftrace.analysis.cluster.layout import find_hosts
    from tftrace.analysis.cluster.report import cluster_page
    from tftrace.analysis.metrics.window import parse_window
    from tftrace.analysis.render.formatting import printable

    if ns.session is not None or ns.cpus is not None:
        raise CliError(
            "report: --session and --cpus are for one run; each host of a directory of hosts "
            "is read as recorded"
        )
    parse_window(ns.window, ns.warmup_steps)  # a bad window: one line, before any work
    layout = find_hosts(ns.run)
    page = ns.output if ns.output is not None else layout.path / DEFAULT_NAME
    if page.is_dir():
        page = page / DEFAULT_NAME
    args = (ns.window, ns.warmup_steps)
    pool = default_executor(2 * len(layout.hosts))
    try:
        summaries = [pool.submit(summarize_host, h.name, str(h.path), *args) for h in layout.hosts]
        reports = [pool.submit(host_report, str(h.path), *args) for h in layout.hosts]
        hosts = [f.result() for f in summaries]
        written = [f.result() for f in reports]
    finally:
        pool.shutdown()
    cluster = cross_host(layout.path, hosts, layout.missing)
    links, problems = {}, {}
    for host, (path, problem) in zip(layout.hosts, written, strict=True):
        if path is not None:
            links[host.name] = quote(os.path.relpath(path, page.parent.resolve()))
        else:
            problems[host.name] = problem or "not written"
    try:
        safe_dir(page.parent)
        write_text_atomic(page, cluster_page(cluster, links, problems))
    except UnsafePathError:
        raise
    except OSError as e:
        raise CliError(f"{e.filename or page}: cannot write ({e.strerror})") from None
    print(f"tftrace: report {page} ({len(layout.hosts)} hosts)")
    for host in layout.hosts:
        shown = links[host.name] if host.name in links else f"no report: {problems[host.name]}"
        print(printable(f"  {host.name}: {shown}"))  # host names, problems: the job's text
    return 0
