"""A run as a Chrome Trace Event Format object: what Perfetto and chrome://tracing open.

Why this shape (events as typed columns, ``trace_fields.py``, written as JSON text in one pass
in sorted order, so that millions of events cost neither a dict each nor a ``json.dumps`` of
them all; ``build_trace`` parses it back for callers that want the object):

- **One process per pool** (``pid``), named with ``process_name`` and ordered with
  ``process_sort_index``: the question tftrace answers is per pool, so the viewer groups
  the threads the same way. pids are fixed per pool (``POOL_ORDER``), so two exports of
  different runs line up.
- **One track per thread** (``tid`` = the OS thread id where known, so it matches
  ``top``/``perf``; a synthetic id >= ``SYNTHETIC_TID_BASE`` otherwise), named
  ``"<TF or Python name> (<pool>, tid N)"`` (the name first: viewers cut long titles).
- **Slices ("X") are exactly the busy intervals of ``analysis/busy.py``**: thread-pool
  regions (cat ``region``), op events on any thread (cat ``op``: node name as ``name``,
  op type and kind in ``args``) and, on Python threads, TF calls and input-pipeline work
  (cat ``call`` / ``tf.data``). So what the viewer shows busy is what ``tftrace analyze``
  counts as busy, and the counters below agree with the slices.
- **Flow arrows** from each ``Record`` (the scheduling thread) to the ``StartRegion`` of
  the closure it scheduled (the worker): ``s``/``f`` pairs with a unique ``id`` per
  region (TF's own flow id is in the region's ``args``: it may repeat). A Record is an
  instant, so it is emitted as a zero-length slice (cat ``record``) for the arrow's tail to
  bind to; the head binds (``bp: "e"``) to the region slice, which starts at that instant.
- **A server's requests** (``request_slices.py``), where asked for: one slice each (cat
  ``request``, named after the function) on its calling thread, from the call to its return;
  at equal times it sorts before the call's own slice, so it is the outermost of the two.
- **Counters ("C")**, one per pool: the number of the pool's threads busy, the step function
  of ``metrics/concurrency.py`` over the trace (``TraceFigures.busy_threads``: measured there,
  converted here), one event per change plus one at the window's end, so the counter's
  maximum is the pool's peak concurrency.

Times: ``ts``/``dur`` are floats in microseconds on the run's axis (ns since the recorder
started, / 1000). Each value is the float closest to ns / 1000 that Perfetto (which
truncates ``µs * 1000`` to an integer ns) reads back as exactly that ns, so slices that
share an edge in the trace share it in the viewer and nesting is preserved.

Events are ordered by time, longer slices first at equal times, and each flow event right
after the slice it binds to: importers that keep file order for equal timestamps then
nest and bind exactly as the trace says.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.export.figures import Requests, StepFunction, TraceFigures
from tftrace.analysis.export.python_stacks import python_stack_slices, stack_tracks
from tftrace.analysis.export.request_slices import request_slices
from tftrace.analysis.export.trace_batches import Batch, Tracks, slice_batch
from tftrace.analysis.export.trace_fields import (
    EventColumns,
    Fields,
    Int,
    Micros,
    Obj,
    Str,
    event_order,
    format_events,
)
from tftrace.analysis.export.trace_format import (
    COUNTER_RANK,
    FLOW_RANK,
    POOL_ORDER,
    SYNTHETIC_TID_BASE,
    Slices,
    Track,
    pool_pid,
)
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import THREADPOOL_RECORD
from tftrace.tracer.safe_files import atomic_output, write_bytes_atomic
from tftrace.version import __version__

DISPLAY_TIME_UNIT = "ns"
COUNTER_NAME = "concurrency"
COUNTER_SERIES = "busy_threads"
FLOW_NAME = "schedule"
FLOW_CAT = "flow"
# Kinds that make a Python thread busy besides ops (see busy.py); ops are exported everywhere.
PYTHON_CALL_KINDS = (EventKind.CALL, EventKind.DATA)


def _label(row: Any) -> str:
    """The thread's most telling name: TF's, Python's, the trace line's, then the OS's."""
    for column in ("tf_name", "python_name", "line_name", "os_name"):
        value = getattr(row, column)
        if isinstance(value, str) and value:
            return value
    return f"thread {row.thread}"


def thread_tracks(run: Run, threads: Iterable[int]) -> dict[int, Track]:
    """A track for each of the given thread keys.

    An OS tid is kept only when no other thread of the run has it: a tid shared by two
    rows would merge two threads into one track.
    """
    rows = run.threads.set_index("thread", drop=False)
    tids = run.threads["tid"].dropna()
    unique = set(tids[~tids.duplicated(keep=False)].astype(int).tolist())
    tracks = {}
    for key in sorted({int(t) for t in threads}):
        row = rows.loc[key]
        has_tid = pd.notna(row.tid) and int(row.tid) in unique
        tid = int(row.tid) if has_tid else SYNTHETIC_TID_BASE + key
        pool = Pool(row.pool)
        shown_tid = str(int(row.tid)) if pd.notna(row.tid) else "?"
        name = f"{_label(row)} ({pool.value}, tid {shown_tid})"
        tracks[key] = Track(key, pool, pool_pid(pool), tid, name)
    return tracks


def _is_kind(events: pd.DataFrame, kinds: Iterable[EventKind]) -> np.ndarray:
    return np.asarray(events["kind"].isin([k.value for k in kinds]))


def _python_mask(figures: TraceFigures, events: pd.DataFrame) -> np.ndarray:
    return np.isin(events["thread"].to_numpy(), figures.python_threads)


def region_slices(run: Run) -> Slices:
    """Thread-pool regions: a worker running one closure."""
    regions = run.regions
    return Slices(
        "region",
        regions["thread"].to_numpy(),
        regions["start_ns"].to_numpy(),
        regions["end_ns"].to_numpy(),
        "region",
        {
            "tf_flow": regions["flow"],
            "queue_ns": regions["queue_ns"],
            "scheduled_by_thread": regions["scheduled_by"],
        },
    )


def op_slices(run: Run) -> Slices:
    """Op events on every thread: the node name as the slice name, its type in args."""
    ops = run.events[_is_kind(run.events, (EventKind.OP,))]
    return Slices(
        "op",
        ops["thread"].to_numpy(),
        ops["start_ns"].to_numpy(),
        ops["end_ns"].to_numpy(),
        _text(ops["op_name"]),
        {
            "op_type": _text(ops["op_type"]),
            "op_kernel": _text(ops["op_kernel"]),
            "kind": _text(ops["kind"]),
            "event": _text(ops["name"]),
        },
    )


def _text(column: pd.Series) -> pd.Series:
    """A categorical column as its slices show it: a missing value as the text "nan" (what
    ``str`` of it gives), so that every slice has every field."""
    if column.isna().any():
        column = column.cat.add_categories(["nan"]).fillna("nan")
    return column


def python_call_slices(figures: TraceFigures) -> list[Slices]:
    """Python threads inside TensorFlow: eager and tf.function calls, input pipelines."""
    events = figures.run.events
    python = _python_mask(figures, events)
    out = []
    for kind in PYTHON_CALL_KINDS:
        mine = events[python & _is_kind(events, (kind,))]
        out.append(
            Slices(
                kind.value,
                mine["thread"].to_numpy(),
                mine["start_ns"].to_numpy(),
                mine["end_ns"].to_numpy(),
                _text(mine["name"]),
                {"kind": kind.value},
            )
        )
    return out


def scheduled_regions(run: Run) -> pd.DataFrame:
    """Regions whose Record is in the trace: the ones a flow arrow can start from."""
    return run.regions[run.regions["scheduled_ns"].notna()]


def record_slices(run: Run) -> Slices:
    """Zero-length slices at each Record that starts a flow (one per thread and instant)."""
    marks = (
        scheduled_regions(run)[["scheduled_by", "scheduled_ns", "flow"]]
        .astype("int64")
        .drop_duplicates(["scheduled_by", "scheduled_ns"])
    )
    at = marks["scheduled_ns"].to_numpy()
    return Slices(
        "record",
        marks["scheduled_by"].to_numpy(),
        at,
        at,
        THREADPOOL_RECORD,
        {"tf_flow": marks["flow"].to_numpy()},
    )


def flow_batches(run: Run, tracks: Tracks, seq: int) -> list[Batch]:
    """An ``s`` at each Record and an ``f`` at its region's start, one id per region.

    Each sorts with the slice it binds to (the Record's zero-length slice; the region),
    just after it.
    """
    regions = scheduled_regions(run)
    n = len(regions)
    sent = regions["scheduled_ns"].to_numpy(dtype=np.int64)
    started = regions["start_ns"].to_numpy()
    lengths = (regions["end_ns"] - regions["start_ns"]).to_numpy()
    by = regions["scheduled_by"].to_numpy(dtype=np.int64)
    ids = np.arange(1, n + 1)
    common: Fields = [("cat", Str(FLOW_CAT)), ("name", Str(FLOW_NAME)), ("id", Int(ids))]
    source_pid, source_tid = tracks.of(by)
    target_pid, target_tid = tracks.of(regions["thread"].to_numpy())
    tail: Fields = [
        ("ph", Str("s")),
        *common,
        ("pid", Int(source_pid)),
        ("tid", Int(source_tid)),
        ("ts", Micros(sent)),
    ]
    head: Fields = [
        ("ph", Str("f")),
        ("bp", Str("e")),
        *common,
        ("pid", Int(target_pid)),
        ("tid", Int(target_tid)),
        ("ts", Micros(started)),
    ]
    order = seq + 2 * np.arange(n)
    return [
        Batch(sent, np.zeros(n, np.int64), FLOW_RANK, order, EventColumns(n, tail)),
        Batch(started, -lengths, FLOW_RANK, order + 1, EventColumns(n, head)),
    ]


def counter_changes(f: StepFunction) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) where c(t) changes, plus the window's end (c = 0 after it)."""
    times, values = f.times[:-1], f.values
    changed = np.r_[True, values[1:] != values[:-1]] if len(values) else np.zeros(0, bool)
    return np.r_[times[changed], f.times[-1:]], np.r_[values[changed], np.zeros(1, np.int64)]


def counter_batches(figures: TraceFigures, pools: Iterable[Pool], seq: int) -> list[Batch]:
    """Busy threads per pool over the trace window, one event per change."""
    out = []
    for pool in pools:
        times, values = counter_changes(figures.busy_threads(pool))
        n = len(times)
        body: Fields = [
            ("ph", Str("C")),
            ("name", Str(COUNTER_NAME)),
            ("pid", Int(pool_pid(pool))),
            ("ts", Micros(times)),
            ("args", Obj([(COUNTER_SERIES, Int(values))])),
        ]
        events = EventColumns(n, body)
        out.append(Batch(times, np.zeros(n, np.int64), COUNTER_RANK, seq + np.arange(n), events))
        seq += n
    return out


def metadata_events(tracks: dict[int, Track]) -> list[dict[str, Any]]:
    """Names and order of every process (pool) and thread (track) used."""
    pools = sorted({t.pool for t in tracks.values()}, key=POOL_ORDER.index)
    out: list[dict[str, Any]] = []
    for pool in pools:
        pid = pool_pid(pool)
        out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": pool.value}})
        out.append(
            {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}
        )
    for track in sorted(tracks.values(), key=lambda t: (t.pid, t.thread)):
        common = {"ph": "M", "pid": track.pid, "tid": track.tid}
        out.append({**common, "name": "thread_name", "args": {"name": track.name}})
        out.append({**common, "name": "thread_sort_index", "args": {"sort_index": track.thread}})
    return out


def all_slices(figures: TraceFigures) -> list[Slices]:
    run = figures.run
    return [region_slices(run), op_slices(run), *python_call_slices(figures), record_slices(run)]


def trace_json(
    figures: TraceFigures, extra: Sequence[dict[str, Any]] = (), requests: Requests | None = None
) -> tuple[bytes | bytearray, int]:
    """The figures' run as Chrome Trace Event Format JSON (UTF-8), with ``extra`` events
    appended (the window marks) and a server's ``requests`` as slices on their threads; and
    how many events it holds."""
    run = figures.run
    asked = request_slices(requests)
    # first: at equal times and lengths a request encloses its call's slice (file order)
    slices = [asked, *all_slices(figures)] if len(asked) else all_slices(figures)
    used = {int(t) for s in slices for t in np.unique(s.thread).tolist()}
    stacks = python_stack_slices(figures)
    tracks = thread_tracks(run, used) | stack_tracks(run, stacks.thread.tolist(), _label)
    lookup = Tracks(tracks)
    batches: list[Batch] = []
    seq = 0
    for s in [*slices, stacks]:
        batches.append(slice_batch(s, lookup, seq))
        seq += len(s)
    batches += flow_batches(run, lookup, seq)
    seq += 2 * len(scheduled_regions(run))
    pools = sorted({t.pool for t in tracks.values()}, key=POOL_ORDER.index)
    batches += counter_batches(figures, pools, seq)
    order = event_order(
        np.concatenate([b.at_ns for b in batches]),
        np.concatenate([b.neg_length for b in batches]),
        np.concatenate([np.full(len(b.seq), b.rank) for b in batches]),
        np.concatenate([b.seq for b in batches]),
    )
    count = sum(len(b.seq) for b in batches)
    head = [json.dumps(e, separators=(",", ":"), allow_nan=False) for e in metadata_events(tracks)]
    tail = [json.dumps(e, separators=(",", ":"), allow_nan=False) for e in extra]
    lo, hi = figures.trace_window
    other = {
        "producer": f"tftrace {__version__}",
        "run": str(run.path),
        "time_axis": "µs since the recorder started (the run's ns axis / 1000)",
        "window_ns": f"{lo} {hi}",
    }
    prefix = [b'{"traceEvents":[', ",".join(head).encode(), b"," if head and count else b""]
    suffix = [
        b"," if tail and (head or count) else b"",
        ",".join(tail).encode(),
        b'],"displayTimeUnit":',
        json.dumps(DISPLAY_TIME_UNIT).encode(),
        b',"otherData":',
        json.dumps(other, separators=(",", ":")).encode(),
        b"}",
    ]
    data = format_events([b.events for b in batches], order, b"".join(prefix), b"".join(suffix))
    return data, len(head) + count + len(tail)


def build_trace(figures: TraceFigures) -> dict[str, Any]:
    """The figures' run as a Chrome Trace Event Format object (the parsed ``trace_json``)."""
    data: dict[str, Any] = json.loads(trace_json(figures)[0])
    return data


def write_run_trace(
    figures: TraceFigures,
    path: Path,
    extra: Sequence[dict[str, Any]] = (),
    requests: Requests | None = None,
) -> tuple[int, int]:
    """Write the run's trace (gzip-compressed when ``path`` ends in ``.gz``), with ``extra``
    events and a server's ``requests`` (``trace_json``); (events, bytes)."""
    data, count = trace_json(figures, extra, requests)
    return count, _write(data, path)


def write_trace(trace: dict[str, Any], path: Path) -> int:
    """Write a trace object as JSON (gzip-compressed when ``path`` ends in ``.gz``); bytes
    written. ``allow_nan=False``: NaN is not JSON, and a viewer would reject the whole file."""
    return _write(json.dumps(trace, separators=(",", ":"), allow_nan=False).encode("utf-8"), path)


def _write(data: bytes | bytearray, path: Path) -> int:
    """Write ``data``, gzip-compressed (level 1) when ``path`` ends in ``.gz``; bytes written.

    Gzip goes through ISA-L's igzip where installed, in blocks on every CPU: 0.3 s against
    zlib's 1.6 s on a 330 MB trace text, and smaller. The header carries no time stamp and the
    blocks do not depend on the number of threads, so the same run exports to the same bytes.
    """
    if path.suffix != ".gz":
        write_bytes_atomic(path, data)
        return len(data)
    try:
        from isal import igzip_threaded
    except ImportError:
        write_bytes_atomic(path, gzip.compress(data, compresslevel=1, mtime=0))
    else:
        threads = min(4, len(os.sched_getaffinity(0)))
        with (
            atomic_output(path) as raw,
            igzip_threaded.open(raw, "wb", compresslevel=1, threads=threads) as out,
        ):
            out.write(data)
    return path.stat().st_size
