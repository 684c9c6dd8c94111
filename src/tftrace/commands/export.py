"""``tftrace export RUN --format perfetto|chrome|csv|parquet [-o PATH]``: a run for other tools.

The trace formats open in a timeline viewer (one process per pool, one track per thread,
busy slices, Record -> region flow arrows, concurrency counters, and a server's requests of
the analysed window as slices on their calling threads); the table formats give the run's
DataFrames (and a server's requests table) to tools that do not have tftrace. Building is in
``analysis/export/trace.py`` and ``analysis/export/tables.py``; this module only picks the
output path and turns failures into one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tftrace.commands import add_run_argument, add_window_arguments, load_run, window_options
from tftrace.errors import CliError
from tftrace.tracer.safe_files import UnsafePathError, safe_dir

NAME = "export"
HELP = "write a run as a Perfetto/Chrome trace, or its tables as CSV or Parquet files"

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

EPILOG = """\
defaults for -o (under the run directory; for a bare .xplane.pb, the directory holding it):
  perfetto  RUN/export/perfetto.json.gz   gzip-compressed Chrome JSON: open in ui.perfetto.dev
  chrome    RUN/export/chrome.json        the same JSON uncompressed: chrome://tracing, Perfetto
  csv       RUN/export/csv/               one <table>.csv per table + schema.json (column dtypes)
  parquet   RUN/export/parquet/           one <table>.parquet per table + schema.json
A trace path ending in .gz is gzip-compressed, any other is plain JSON, whatever the format.
The trace and the tables stay whole; --window only marks the analysed window (and the
warm-up) in the trace, as slices of a "tftrace window" process at the top. A server's
requests are those of that window (as tftrace analyze reports them): in the trace, a slice
each (cat "request") on its calling thread; in the tables, requests.csv (or .parquet).
Times: the trace in microseconds, the tables in nanoseconds, both since the recorder started.

A directory of hosts (DIR/<task>/, as tftrace record -o DIR/{task} writes them):
  perfetto, chrome  one trace, DIR/export/perfetto.json.gz or chrome.json: a process group
                    per host ("worker-1: inter-op", ...), the hosts together in task order,
                    on one time axis (the wall clock, from the earliest host's start)
  csv, parquet      one directory of tables per host: DIR/export/csv/<host>/, ...
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    add_run_argument(parser)
    add_window_arguments(
        parser, "marked in a trace, and a server's requests (the export itself stays whole)"
    )
    parser.add_argument(
        "--format",
        required=True,
        choices=(*TRACE_FORMATS, *TABLE_FORMATS),
        help="perfetto/chrome: a trace-viewer JSON file; csv/parquet: a directory of tables",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="PATH",
        help="file (trace formats) or directory (table formats) to write; default below",
    )


def output_path(run_root: Path, fmt: str, given: Path | None) -> Path:
    """The path to write: the one given, else ``RUN/export/<default name>``."""
    return given if given is not None else run_root / "export" / DEFAULT_NAMES[fmt]


def _folder(path: Path, fmt: str) -> Path:
    """The folder written into: the trace file's, or the directory of tables."""
    return path.parent if fmt in TRACE_FORMATS else path


def _check_folder(path: Path, fmt: str, root: Path | None, create: bool = False) -> None:
    """Refuse a symbolic link where the export's folder goes (a shared run may hold planted
    ones), and make it when ``create``: the default output's ``RUN/export`` and
    ``RUN/export/csv`` (``root``: the run), ``-o DIR`` or the trace file's folder given
    (``root`` None). Files are then written beside links, never through them."""
    safe_dir(_folder(path, fmt), root=root, create=create)


def _check_output(path: Path, fmt: str) -> None:
    """Refuse a file where a directory is wanted and the reverse, before any work."""
    if fmt in TRACE_FORMATS and path.is_dir():
        raise CliError(f"export: {path} is a directory; give a file name for the trace")
    if fmt in TABLE_FORMATS and path.exists() and not path.is_dir():
        raise CliError(f"export: {path} is a file; {fmt} writes a directory of tables")


def _export_trace(run: Any, path: Path, window: dict[str, Any], root: Path | None) -> str:
    from tftrace.analysis.export.request_slices import window_requests
    from tftrace.analysis.export.trace import write_run_trace
    from tftrace.analysis.export.window_marks import window_marks

    if run.events.empty:
        why = "; ".join(run.missing) or "the trace holds no host events"
        raise CliError(f"export: {run.path} has no trace events to export ({why})")
    marks = window_marks(run, **window)  # first: a bad window fails before the long part
    server = window_requests(run, **window)
    _check_folder(path, "chrome", root, create=True)
    count, size = write_run_trace(run, path, marks, server.requests if server else None)
    return f"{path} ({count} events, {size / 1024:.0f} KiB)"


def _export_tables(
    run: Any, directory: Path, fmt: str, window: dict[str, Any], root: Path | None
) -> str:
    from tftrace.analysis.export.request_slices import window_requests
    from tftrace.analysis.export.tables import write_tables

    server = window_requests(run, **window)
    _check_folder(directory, fmt, root, create=True)
    paths = write_tables(run, directory, fmt, server)
    size = sum(p.stat().st_size for p in paths)
    return f"{directory}/ ({len(paths) - 1} tables + schema.json, {size / 1024:.0f} KiB)"


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.cluster.layout import is_cluster_dir

    if ns.output is not None:
        _check_output(ns.output, ns.format)
    if is_cluster_dir(ns.run):
        return _cluster(ns)
    loaded = load_run(ns)
    path = output_path(loaded.path, ns.format, ns.output)
    _check_output(path, ns.format)
    root = loaded.path if ns.output is None else None
    try:
        _check_folder(path, ns.format, root)  # a link: refused before any work
        if ns.format in TRACE_FORMATS:
            written = _export_trace(loaded, path, window_options(ns), root)
        else:
            written = _export_tables(loaded, path, ns.format, window_options(ns), root)
    except UnsafePathError:
        raise  # its own line says which link and why
    except OSError as e:
        raise CliError(f"export: cannot write {e.filename or path} ({e.strerror})") from None
    print(f"wrote {written}")
    if ns.format in TRACE_FORMATS:
        print("open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing")
    return 0


def _cluster(ns: argparse.Namespace) -> int:
    """A directory of hosts: one trace with a process group per host, or tables per host."""
    from tftrace.analysis.cluster.export import write_cluster_tables, write_cluster_trace
    from tftrace.analysis.render.formatting import printable  # host names: the job's text

    if ns.session is not None:
        raise CliError("export: --session picks a profile session of one run; DIR holds hosts")
    path = output_path(ns.run, ns.format, ns.output)
    _check_output(path, ns.format)
    root = ns.run if ns.output is None else None
    try:
        _check_folder(path, ns.format, root, create=True)
        if ns.format in TRACE_FORMATS:
            count, size, hosts = write_cluster_trace(ns.run, path, **window_options(ns))
            shown = f"{sum(h.skipped is None for h in hosts)} of {len(hosts)} hosts"
            print(f"wrote {path} ({count} events, {shown}, {size / 1024:.0f} KiB)")
            for h in hosts:
                if h.skipped is not None:
                    print(printable(f"left out {h.name}: {h.skipped}"))
            print("open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing")
        else:
            for name, directory, files in write_cluster_tables(ns.run, path, ns.format):
                print(printable(f"wrote {directory}/ ({name}: {files - 1} tables + schema.json)"))
    except UnsafePathError:
        raise
    except OSError as e:
        raise CliError(f"export: cannot write {e.filename or path} ({e.strerror})") from None
    return 0
