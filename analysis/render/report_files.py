"""One run's report on disk (``tftrace report RUN``, and each host's of ``tftrace report DIR``):
the self-contained HTML page and its figures as PNG files in a folder named after the page,
beside it (``report.html`` -> ``report_files/concurrency.png``, ...), for slides and issues.

Light to import (the command line imports it at start-up): drawing loads only when writing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.errors import TftraceError
from tftrace.tracer.safe_files import (
    UnsafePathError,
    safe_dir,
    write_bytes_atomic,
    write_text_atomic,
)

DEFAULT_NAME = "report.html"


class ReportWriteError(TftraceError):
    """A report that could not be written: the message names the file and the reason."""


def images_of(page: Path) -> Path:
    """The folder of a page's PNGs: ``x.html`` -> ``x_files/`` beside it."""
    return page.with_name(page.stem + "_files")


@dataclass(frozen=True)
class ReportFiles:
    page: Path
    images: list[Path]

    @property
    def image_dir(self) -> Path:
        return images_of(self.page)


def output_paths(output: Path | None, run_path: Path) -> tuple[Path, Path]:
    """(the HTML page, the folder of its PNGs): ``output``, else ``run_path/report.html``
    (a directory: ``report.html`` in it); ``x.html`` -> ``x_files/`` beside it."""
    page = output if output is not None else run_path / DEFAULT_NAME
    if page.is_dir():
        page = page / DEFAULT_NAME
    return page, images_of(page)


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


def report_run(analysis: Any, output: Path | None = None) -> ReportFiles:
    """The report of an analysed run at ``output`` (see ``output_paths``); a file that cannot
    be written is one ``ReportWriteError`` (a link where a folder goes: ``UnsafePathError``)."""
    page, image_dir = output_paths(output, analysis.run.path)
    with cannot_write(page):
        return write_report(analysis, page, image_dir)


@contextmanager
def cannot_write(path: Path) -> Iterator[None]:
    """An ``OSError`` inside the block becomes one ``ReportWriteError`` naming the file
    (``path`` where the error names none); ``UnsafePathError`` keeps its own line."""
    try:
        yield
    except UnsafePathError:
        raise
    except OSError as e:
        raise ReportWriteError(f"{e.filename or path}: cannot write ({e.strerror})") from None
