"""A multi-host directory exported for other tools: one trace with a process group per host
(``tftrace export DIR --format perfetto|chrome``), or one directory of tables per host
(``--format csv|parquet``).

The trace is each host's own export (``analysis/export/trace.py``: one process per pool, one
track per thread, slices, flows, counters, the window marked) made one trace:

- **Names**: each process becomes ``"<host>: <pool>"`` (``"worker-1: inter-op"``), so the
  viewer's groups say which host they are.
- **pids** do not collide: host *i*'s pids are its own plus ``i * HOST_PID_STRIDE`` (host 0
  keeps its own, so a one-host directory exports as that host does, renamed).
- **Order**: ``process_sort_index`` puts each host's processes together, hosts in the job's
  task order, each host's own order kept inside.
- **tids** stay unique across the whole trace (Perfetto's JSON importer wants them so): a tid
  another host already used becomes a fresh one from ``FRESH_TID_BASE``; the thread's name
  still says its real tid. Flow ids are offset per host, so arrows never join two hosts.
- **One time axis**: each host's events are on its own run's axis (ns since its recorder
  started); the hosts share the wall clock, so host *i* is shifted by its origin's wall time
  less the earliest host's. ``ts`` stays ns-exact as Perfetto reads it.

Times: µs since the earliest host's recorder started; ``otherData`` gives that instant on the
wall clock and each host's shift.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tftrace.analysis.cluster.layout import HostDir, find_hosts
from tftrace.analysis.export.trace import DISPLAY_TIME_UNIT, _write, trace_json
from tftrace.analysis.export.trace_format import exact_microseconds
from tftrace.analysis.export.window_marks import window_marks
from tftrace.errors import TftraceError
from tftrace.tracer.safe_files import safe_dir
from tftrace.version import __version__

HOST_PID_STRIDE = 100_000  # above every pid of one host's export (its window's is 10 000)
HOST_SORT_STRIDE = 1_000  # above every process_sort_index of one host's export
FRESH_TID_BASE = 3 << 30  # above the exports' synthetic and py-spy tids, below 2**32


class ClusterExportError(TftraceError):
    """A multi-host directory that cannot be exported; the message says why in one line."""


@dataclass(frozen=True)
class ExportedHost:
    """One host in a multi-host export: ``shift_ns`` (its axis against the earliest host's),
    ``pid_base`` (added to its pids), ``events``; ``skipped``: why it is not in the trace."""

    name: str
    path: Path
    shift_ns: int = 0
    pid_base: int = 0
    events: int = 0
    skipped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "run": str(self.path),
            "shift_ns": self.shift_ns,
            "pid_base": self.pid_base,
            "events": self.events,
            "skipped": self.skipped,
        }


def origin_wall_ns(host: HostDir) -> int:
    """The wall-clock instant of the host's time axis (its recorder's start), from its
    manifest; loaded from its run where the manifest lacks it."""
    start = host.manifest.clock.start
    if start is not None:
        return int(start.wall_ns)
    from tftrace.analysis.model.run import load

    return int(load(host.path).origin.wall_ns)


class UniqueIds:
    """tids and flow ids kept unique across the hosts of one trace."""

    def __init__(self) -> None:
        self.tids: set[int] = set()
        self.fresh = FRESH_TID_BASE
        self.flow_base = 0

    def tid_map(self, own: set[int]) -> dict[int, int]:
        out = {}
        for tid in sorted(own):
            new = tid
            if tid in self.tids:
                while self.fresh in self.tids or self.fresh in own:
                    self.fresh += 1
                new = self.fresh
            self.tids.add(new)
            out[tid] = new
        return out


def host_events(
    events: list[dict[str, Any]], name: str, index: int, shift_ns: int, ids: UniqueIds
) -> list[dict[str, Any]]:
    """One host's export events, renamed, renumbered and shifted in place (see the module's
    docstring); returns them."""
    pid_base = index * HOST_PID_STRIDE
    tids = ids.tid_map({int(e["tid"]) for e in events if "tid" in e})
    flows = 0
    timed = []
    for e in events:
        e["pid"] = int(e["pid"]) + pid_base
        if "tid" in e:
            e["tid"] = tids[int(e["tid"])]
        if e["ph"] in ("s", "f"):
            flows = max(flows, int(e["id"]))
            e["id"] = int(e["id"]) + ids.flow_base
        if e["ph"] == "M" and e["name"] == "process_name":
            e["args"] = {"name": f"{name}: {e['args']['name']}"}
        elif e["ph"] == "M" and e["name"] == "process_sort_index":
            e["args"] = {"sort_index": index * HOST_SORT_STRIDE + int(e["args"]["sort_index"]) + 2}
        if "ts" in e:
            timed.append(e)
    ids.flow_base += flows
    if timed and shift_ns:
        # the exporter's µs truncate back to its exact ns (trace_format.exact_microseconds)
        ns = np.trunc(np.array([e["ts"] for e in timed], dtype=np.float64) * 1000.0)
        shifted = exact_microseconds(ns.astype(np.int64) + shift_ns).tolist()
        for e, ts in zip(timed, shifted, strict=True):
            e["ts"] = ts
    return events


def _chunk(events: list[dict[str, Any]]) -> bytes:
    return json.dumps(events, separators=(",", ":"), allow_nan=False)[1:-1].encode("utf-8")


def cluster_trace_json(
    path: Path | str, window: str = "steady", warmup_steps: int = 1
) -> tuple[bytes, int, list[ExportedHost]]:
    """Every host of the multi-host directory ``path`` as one Chrome Trace Event Format JSON
    (UTF-8): the text, its number of events, and each host's place in it.

    Hosts without trace events are left out (``ExportedHost.skipped`` says why, as does the
    trace's ``otherData``); ``ClusterExportError`` when no host has any."""
    from tftrace.analysis.metrics.trace_figures import trace_figures
    from tftrace.analysis.model.run import load

    layout = find_hosts(path)
    origins = [origin_wall_ns(h) for h in layout.hosts]
    base = min(origins)
    ids = UniqueIds()
    meta: list[bytes] = []
    body: list[bytes] = []
    hosts: list[ExportedHost] = []
    count = 0
    for index, (host, origin) in enumerate(zip(layout.hosts, origins, strict=True)):
        run = load(host.path)
        if run.events.empty:
            why = "; ".join(run.missing) or "the trace holds no host events"
            hosts.append(ExportedHost(host.name, host.path, skipped=f"no trace events ({why})"))
            continue
        figures = trace_figures(run, window, warmup_steps)
        try:
            marks = window_marks(figures)
        except TftraceError as e:
            raise ClusterExportError(f"{host.name}: {e}") from None
        events = json.loads(trace_json(figures, marks)[0])["traceEvents"]
        del run, figures
        shift = origin - base
        host_events(events, host.name, index, shift, ids)
        meta.append(_chunk([e for e in events if e["ph"] == "M"]))
        body.append(_chunk([e for e in events if e["ph"] != "M"]))
        count += len(events)
        hosts.append(
            ExportedHost(host.name, host.path, shift, index * HOST_PID_STRIDE, len(events))
        )
    if not count:
        why = "; ".join(f"{h.name}: {h.skipped}" for h in hosts)
        raise ClusterExportError(f"export: no host of {layout.path} has trace events ({why})")
    other = {
        "producer": f"tftrace {__version__}",
        "cluster": str(layout.path),
        "time_axis": "µs since the earliest host's recorder started (origin_wall_ns on the "
        "wall clock); each host shifted by shift_ns onto it",
        "origin_wall_ns": base,
        "hosts": [h.to_json() for h in hosts],
        "missing": list(layout.missing),
    }
    data = b"".join(
        [
            b'{"traceEvents":[',
            b",".join(c for c in (*meta, *body) if c),
            b'],"displayTimeUnit":',
            json.dumps(DISPLAY_TIME_UNIT).encode(),
            b',"otherData":',
            json.dumps(other, separators=(",", ":"), allow_nan=False).encode("utf-8"),
            b"}",
        ]
    )
    return data, count, hosts


def write_cluster_trace(
    path: Path | str, out: Path, window: str = "steady", warmup_steps: int = 1
) -> tuple[int, int, list[ExportedHost]]:
    """Write ``cluster_trace_json`` to ``out`` (gzip-compressed when it ends in ``.gz``):
    (events, bytes written, the hosts)."""
    data, count, hosts = cluster_trace_json(path, window, warmup_steps)
    safe_dir(out.parent)
    return count, _write(data, out), hosts


def write_cluster_tables(
    path: Path | str, out: Path, fmt: str, window: str = "steady", warmup_steps: int = 1
) -> list[tuple[str, Path, int]]:
    """Each host's tables (``analysis/export/tables.py``; a server's requests of the window
    too, as for one run) in a directory of its own, ``out/<host's directory name>/``:
    (host, directory, files written) per host."""
    from tftrace.analysis.export.request_slices import window_requests
    from tftrace.analysis.export.tables import write_tables
    from tftrace.analysis.metrics.trace_figures import trace_figures
    from tftrace.analysis.model.run import load

    written = []
    for host in find_hosts(path).hosts:
        directory = out / host.path.name
        figures = trace_figures(load(host.path), window, warmup_steps)
        try:
            server = window_requests(figures)
        except TftraceError as e:
            raise ClusterExportError(f"{host.name}: {e}") from None
        paths = write_tables(figures, directory, fmt, server)
        written.append((host.name, directory, len(paths)))
    return written


@dataclass(frozen=True)
class ClusterExported:
    """What ``export_cluster`` wrote: ``path`` (the trace, or the directory holding each
    host's tables); for a trace its ``events``, ``size`` (bytes) and ``hosts`` (each one's
    place, or why it is left out); for tables ``tables``: (host, its directory, files)."""

    path: Path
    fmt: str
    events: int = 0
    size: int = 0
    hosts: tuple[ExportedHost, ...] = ()
    tables: tuple[tuple[str, Path, int], ...] = ()


def export_cluster(
    path: Path | str,
    fmt: str,
    output: Path | None = None,
    *,
    window: str = "steady",
    warmup_steps: int = 1,
) -> ClusterExported:
    """Export a directory of hosts as ``fmt`` at ``output`` (default, as for one run,
    ``DIR/export/<DEFAULT_NAMES[fmt]>``): one trace with a process group per host, or each
    host's tables in ``output/<host>/``. ``window``: as for one run, in every host."""
    from tftrace.analysis.export.output import (
        TRACE_FORMATS,
        cannot_write,
        check_folder,
        check_output,
        output_path,
    )

    out = output_path(Path(path), fmt, output)
    check_output(out, fmt)
    with cannot_write(out):
        check_folder(out, fmt, Path(path) if output is None else None, create=True)
        if fmt in TRACE_FORMATS:
            events, size, hosts = write_cluster_trace(path, out, window, warmup_steps)
            return ClusterExported(out, fmt, events, size, tuple(hosts))
        tables = write_cluster_tables(path, out, fmt, window, warmup_steps)
        return ClusterExported(out, fmt, tables=tuple(tables))
