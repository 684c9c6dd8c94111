"""``tftrace export RUN --format perfetto|chrome|csv|parquet [-o PATH]``: a run for other tools.

The trace formats open in a timeline viewer (one process per pool, one track per thread,
busy slices, Record -> region flow arrows, concurrency counters, and a server's requests of
the analysed window as slices on their calling threads); the table formats give the run's
DataFrames (and a server's requests table) to tools that do not have tftrace. Writing is
``analysis.export.output.export_run`` (one run's ``metrics.trace_figures``) and
``analysis.cluster.export.export_cluster`` (a directory of hosts); this module maps the flags
onto them and prints what they wrote.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tftrace.analysis.export.output import TABLE_FORMATS, TRACE_FORMATS
from tftrace.commands import (
    add_run_argument,
    add_window_arguments,
    load_run,
    path_kind,
    refuse_for_hosts,
    window_options,
)

NAME = "export"
HELP = "write a run as a Perfetto/Chrome trace, or its tables as CSV or Parquet files"
OPEN_IT = "open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing"

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
--window means in each host what it means in one run; --session picks from one run only.
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


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.export.output import check_output, export_run
    from tftrace.analysis.metrics.trace_figures import trace_figures

    if ns.output is not None:
        check_output(ns.output, ns.format)  # before any work
    if path_kind(NAME, ns.run, ("run", "hosts")) == "hosts":
        return _cluster(ns)
    # the figures are computed as the export reads them: only those it writes
    done = export_run(trace_figures(load_run(ns), **window_options(ns)), ns.format, ns.output)
    if ns.format in TRACE_FORMATS:
        print(f"wrote {done.path} ({done.count} events, {done.size / 1024:.0f} KiB)")
        print(OPEN_IT)
    else:
        tables = f"{done.count} tables + schema.json, {done.size / 1024:.0f} KiB"
        print(f"wrote {done.path}/ ({tables})")
    return 0


def _cluster(ns: argparse.Namespace) -> int:
    """A directory of hosts: one trace with a process group per host, or tables per host;
    --window means in every host what it means in one run."""
    from tftrace.analysis.cluster.export import export_cluster
    from tftrace.analysis.render.formatting import printable  # host names: the job's text

    refuse_for_hosts(NAME, ns, "session")
    done = export_cluster(ns.run, ns.format, ns.output, **window_options(ns))
    if ns.format in TRACE_FORMATS:
        shown = f"{sum(h.skipped is None for h in done.hosts)} of {len(done.hosts)} hosts"
        print(f"wrote {done.path} ({done.events} events, {shown}, {done.size / 1024:.0f} KiB)")
        for h in done.hosts:
            if h.skipped is not None:
                print(printable(f"left out {h.name}: {h.skipped}"))
        print(OPEN_IT)
    else:
        for name, directory, files in done.tables:
            print(printable(f"wrote {directory}/ ({name}: {files - 1} tables + schema.json)"))
    return 0
