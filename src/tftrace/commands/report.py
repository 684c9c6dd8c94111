"""``tftrace report RUN [-o FILE]``: the analyses of a run as one self-contained HTML page.

The page (default ``RUN/report.html``) holds the run summary, findings, every table of
``tftrace analyze`` and five figures embedded as base64 PNG; it needs no network. The same
figures are written as PNG files into a folder named after the page, beside it
(``report.html`` -> ``report_files/concurrency.png``, ...), for slides and issues.

Figures and findings come from ``tftrace.analysis.analyze.analyze``: the page only shows them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.commands import add_analysis_arguments, analyze_run
from tftrace.errors import CliError

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
    """Draw the figures, write them as PNG files and the page that embeds them."""
    from tftrace.analysis.render.html import render_page
    from tftrace.analysis.render.plots import png_images

    images = png_images(analysis)
    image_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, png in images.items():
        path = image_dir / f"{name}.png"
        path.write_bytes(png)
        written.append(path)
    relative = image_dir.name if image_dir.parent == page.parent else str(image_dir)
    page.write_text(render_page(analysis, images, relative), encoding="utf-8")
    return ReportFiles(page, written)


def run(ns: argparse.Namespace) -> int:

    analysis = analyze_run(ns)
    page, image_dir = output_paths(ns.output, analysis.run.path)
    try:
        files = write_report(analysis, page, image_dir)
    except OSError as e:
        raise CliError(f"{e.filename or page}: cannot write ({e.strerror})") from None
    print(f"tftrace: report {files.page} ({len(files.images)} figures also in {image_dir}/)")
    return 0
