"""Where an export goes and ``export_run``: a run written as a trace (``trace.py``) or as
tables (``tables.py``) at the path given, else ``RUN/export/<default name>``; the same rules
serve one run and each directory of hosts (``analysis/cluster/export.py``).

Nothing is written through a symbolic link (a shared run may hold planted ones): a link where
the export's folder goes is refused (``UnsafePathError``) before any work. Light to import
(the command line takes the format names from here at start-up).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tftrace.errors import TftraceError
from tftrace.tracer.safe_files import UnsafePathError, safe_dir

if TYPE_CHECKING:
    from tftrace.analysis.export.figures import TraceFigures

TRACE_FORMATS = ("perfetto", "chrome")
TABLE_FORMATS = ("csv", "parquet")
# Perfetto reads gzip directly and the JSON shrinks ~10x; chrome://tracing's loader and
# most ad-hoc tools want plain JSON.
DEFAULT_NAMES = {
    "perfetto": "perfetto.json.gz",
    "chrome": "chrome.json",
    "csv": "csv",
    "parquet": "parquet",
}


class ExportError(TftraceError):
    """An export that cannot be written where asked, or of a run with nothing to export;
    the message says why in one line."""


def output_path(run_root: Path, fmt: str, given: Path | None) -> Path:
    """The path to write: the one given, else ``RUN/export/<default name>``."""
    return given if given is not None else run_root / "export" / DEFAULT_NAMES[fmt]


def check_output(path: Path, fmt: str) -> None:
    """Refuse a file where a directory is wanted and the reverse, before any work."""
    if fmt in TRACE_FORMATS and path.is_dir():
        raise ExportError(f"export: {path} is a directory; give a file name for the trace")
    if fmt in TABLE_FORMATS and path.exists() and not path.is_dir():
        raise ExportError(f"export: {path} is a file; {fmt} writes a directory of tables")


def check_folder(path: Path, fmt: str, root: Path | None, create: bool = False) -> None:
    """Refuse a symbolic link where the export's folder goes (the trace file's, or the
    directory of tables), and make it when ``create``: the default output's ``RUN/export``
    and ``RUN/export/csv`` (``root``: the run), ``-o DIR`` or the trace file's folder given
    (``root`` None). Files are then written beside links, never through them."""
    safe_dir(path.parent if fmt in TRACE_FORMATS else path, root=root, create=create)


@contextmanager
def cannot_write(path: Path) -> Iterator[None]:
    """An ``OSError`` inside the block becomes one ``ExportError`` naming the file (``path``
    where the error names none); ``UnsafePathError`` keeps its own line."""
    try:
        yield
    except UnsafePathError:
        raise
    except OSError as e:
        raise ExportError(f"export: cannot write {e.filename or path} ({e.strerror})") from None


@dataclass(frozen=True)
class Exported:
    """What ``export_run`` wrote: ``path`` (the trace file or the directory of tables),
    ``count`` (trace events, or tables without schema.json) and ``size`` (bytes)."""

    path: Path
    fmt: str
    count: int
    size: int


def export_run(figures: TraceFigures, fmt: str, output: Path | None = None) -> Exported:
    """Write a loaded run's figures (``metrics.trace_figures``) as ``fmt``
    (``TRACE_FORMATS``, ``TABLE_FORMATS``) at ``output`` (default
    ``RUN/export/<DEFAULT_NAMES[fmt]>``). The figures' window: marked in a trace, and a
    server's requests of it (in the trace and as a table); the export itself stays whole."""
    run = figures.run
    path = output_path(run.path, fmt, output)
    check_output(path, fmt)
    root = run.path if output is None else None
    with cannot_write(path):
        check_folder(path, fmt, root)  # a link: refused before any work
        if fmt in TRACE_FORMATS:
            return _trace(figures, path, fmt, root)
        return _tables(figures, path, fmt, root)


def _trace(figures: TraceFigures, path: Path, fmt: str, root: Path | None) -> Exported:
    from tftrace.analysis.export.request_slices import window_requests
    from tftrace.analysis.export.trace import write_run_trace
    from tftrace.analysis.export.window_marks import window_marks

    run = figures.run
    if run.events.empty:
        why = "; ".join(run.missing) or "the trace holds no host events"
        raise ExportError(f"export: {run.path} has no trace events to export ({why})")
    marks = window_marks(figures)  # first: a bad window fails before the long part
    server = window_requests(figures)
    check_folder(path, "chrome", root, create=True)
    count, size = write_run_trace(figures, path, marks, server.requests if server else None)
    return Exported(path, fmt, count, size)


def _tables(figures: TraceFigures, directory: Path, fmt: str, root: Path | None) -> Exported:
    from tftrace.analysis.export.request_slices import window_requests
    from tftrace.analysis.export.tables import write_tables

    server = window_requests(figures)  # a server's: a bad window fails before any writing
    check_folder(directory, fmt, root, create=True)
    paths = write_tables(figures, directory, fmt, server)
    return Exported(directory, fmt, len(paths) - 1, sum(p.stat().st_size for p in paths))
