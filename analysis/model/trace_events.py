"""The host plane of a decoded trace as the ``events`` table, all vectorised.

Event start (ns) = line.timestamp_ns + offset_ps / 1000. In the traces TF writes,
line timestamps count from the profile's start (``profile_start_time`` on the
``Task Environment`` plane, ns since the epoch); some writers put epoch ns in the
line timestamp itself. Either way times are moved onto the run's axis here.

Everything here runs once per trace over millions of events: per-event work is
numpy only, and per-name work is done once per distinct name (metadata id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.event_kinds import classify
from tftrace.analysis.model.schema import EVENTS, validate
from tftrace.analysis.model.threads import TraceLine
from tftrace.analysis.model.vocabulary import (
    CONSUMER_ID_STAT,
    CONSUMER_TYPE_STAT,
    HOST_PLANE,
    PRODUCER_ID_STAT,
    PRODUCER_TYPE_STAT,
    PROFILE_START_STAT,
    PROFILE_STOP_STAT,
    STEP_NUM_ARG,
    TASK_PLANE,
    is_python_api_event,
)
from tftrace.analysis.xplane.columns import DecodedSpace
from tftrace.errors import TraceError

# The events table's flow columns and the stat each one is read from.
FLOW_STATS = {
    "p": PRODUCER_ID_STAT,
    "c": CONSUMER_ID_STAT,
    "pt": PRODUCER_TYPE_STAT,
    "ct": CONSUMER_TYPE_STAT,
}
# Integer stats promoted to event columns beside the flows: the step number of a user's
# ``Trace(name, step_num=N)`` block (a step marker the user wrote wins over inferred steps).
PROMOTED_STATS = {**FLOW_STATS, "step_num": STEP_NUM_ARG}
# The decoded event columns the host tables are built from.
HOST_EVENT_COLUMNS = ("metadata_id", "offset_ps", "duration_ps", "num_occurrences")
_EPOCH_NS = 10**17  # a line timestamp this large is already ns since the epoch


def wanted_plane(name: str) -> bool:
    """Planes to decode: device planes (GPU, TPU) can be huge and are not read here."""
    return name in (HOST_PLANE, TASK_PLANE)


@dataclass(frozen=True)
class HostTrace:
    space: DecodedSpace
    plane: int  # index of the host plane
    line_rows: np.ndarray  # rows of space.lines on the host plane
    events: slice | np.ndarray  # rows of space.events on the host plane (a slice if contiguous)
    n_events: int
    profile_start_ns: int | None  # wall clock, ns since the epoch
    profile_stop_ns: int | None

    def column(self, name: str) -> np.ndarray:
        """A column of the host plane's events (a view when the rows are contiguous)."""
        return self.space.events[name][self.events]


def host_trace(space: DecodedSpace, source: str) -> HostTrace:
    planes = {p.name: p for p in space.planes}
    host = planes.get(HOST_PLANE)
    if host is None:
        names = ", ".join(sorted(planes)) or "none"
        raise TraceError(f"{source}: no {HOST_PLANE} plane (planes: {names}); not a TF host trace")
    task = planes.get(TASK_PLANE)
    stats: dict[str, Any] = task.stats if task is not None else {}
    line_rows = np.flatnonzero(space.lines["plane"] == host.index)
    firsts = space.lines["first_event"][line_rows]
    counts = space.lines["n_events"][line_rows]
    n = int(counts.sum())
    # Events of one line are contiguous; so are the lines of one plane, in file order.
    if n == 0 or int(firsts[0]) + n == int(firsts[-1] + counts[-1]):
        rows: slice | np.ndarray = slice(
            int(firsts[0]) if n else 0, (int(firsts[0]) if n else 0) + n
        )
    else:
        rows = np.concatenate([np.arange(f, f + c) for f, c in zip(firsts, counts, strict=True)])
    return HostTrace(
        space,
        host.index,
        line_rows,
        rows,
        n,
        _int_or_none(stats.get(PROFILE_START_STAT)),
        _int_or_none(stats.get(PROFILE_STOP_STAT)),
    )


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, np.integer)) else None


def _metadata_table(trace: HostTrace, values: list[Any], default: Any) -> tuple[np.ndarray, int]:
    """A lookup array indexed by event metadata id (ids are small: one per distinct name)."""
    plane = trace.space.planes[trace.plane]
    ids = np.fromiter(plane.event_metadata.keys(), dtype=np.int64, count=len(plane.event_metadata))
    size = int(ids.max()) + 1 if len(ids) else 1
    table = np.full(size, default, dtype=np.asarray(values).dtype if values else np.int32)
    if len(ids):
        table[ids] = values
    return table, size


def _metadata_codes(trace: HostTrace) -> tuple[np.ndarray, list[str]]:
    """(code of each host event's name, the distinct names): the names as a categorical.

    An id with no metadata entry (a damaged trace) gets a name of its own, "<metadata N>".
    """
    plane = trace.space.planes[trace.plane]
    names = [name for name, _ in plane.event_metadata.values()]
    categories = sorted(set(names))
    code_of = {name: code for code, name in enumerate(categories)}
    table, size = _metadata_table(trace, [code_of[n] for n in names], -1)
    ids = trace.column("metadata_id")
    if len(ids) == 0 or (ids.min() >= 0 and ids.max() < size):
        codes = table[ids]
    else:
        codes = np.where((ids >= 0) & (ids < size), table[np.clip(ids, 0, size - 1)], -1)
    orphans = codes < 0
    if orphans.any():
        unknown = np.unique(ids[orphans])
        codes = codes.copy()
        for k, metadata_id in enumerate(unknown):
            codes[orphans & (ids == metadata_id)] = len(categories) + k
        categories += [f"<metadata {i}>" for i in unknown]
    return codes, categories


def trace_lines(trace: HostTrace, start: np.ndarray, end: np.ndarray) -> list[TraceLine]:
    """The host plane's lines: which call TF's Python API, and when they have events.

    ``start``/``end`` are the host events' times (``event_times``), in host-event order.
    """
    space, plane = trace.space, trace.space.planes[trace.plane]
    api, _ = _metadata_table(
        trace, [is_python_api_event(name) for name, _ in plane.event_metadata.values()], False
    )
    ids = trace.column("metadata_id")
    is_api = api[np.clip(ids, 0, len(api) - 1)]
    out = []
    cursor = 0  # host events are the host lines' events, line after line
    for row in trace.line_rows:
        n = int(space.lines["n_events"][row])
        window = slice(cursor, cursor + n)
        times = (int(start[window].min()), int(end[window].max())) if n else (None, None)
        cursor += n
        line_id = int(space.lines["id"][row])
        out.append(TraceLine(line_id, space.line_names[row], bool(is_api[window].any()), *times))
    return out


def event_times(
    trace: HostTrace, origin_wall_ns: int, profile_start_ns: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(start_ns, end_ns) of the host events on the run's axis.

    ``profile_start_ns`` (wall clock) is where relative line timestamps count from.
    """
    lines = trace.space.lines
    line_ts = lines["timestamp_ns"][trace.line_rows]
    base = (profile_start_ns or origin_wall_ns) - origin_wall_ns
    line_base = np.where(line_ts < _EPOCH_NS, line_ts + base, line_ts - origin_wall_ns)
    offset_ps = trace.column("offset_ps")
    occurrences = trace.column("num_occurrences")
    if occurrences.any():  # aggregated events carry a count, not an offset
        offset_ps = np.where(occurrences > 0, 0, offset_ps)
    start = np.repeat(line_base, lines["n_events"][trace.line_rows]) + offset_ps // 1000
    end = start + trace.column("duration_ps") // 1000
    return start.astype(np.int64, copy=False), end.astype(np.int64, copy=False)


def _flow_columns(trace: HostTrace) -> dict[str, pd.arrays.IntegerArray]:
    """_p/_c/_pt/_ct (and step_num) of each host event (uint64 ids kept bit for bit as int64).

    The decoder promoted them to per-event columns (``decode(event_stats=FLOW_STATS...)``),
    which are writable and handed over: the host rows are taken as they are, a view when they
    are contiguous (a copy would touch another 16 MB per column of a 2 M-event trace).
    """
    promoted = trace.space.event_stat_columns
    missing = [name for name in PROMOTED_STATS.values() if name not in promoted]
    if missing:
        raise ValueError(f"the trace was decoded without event_stats={missing}")
    out = {}
    for column, stat_name in PROMOTED_STATS.items():
        values, present = promoted[stat_name]
        out[column] = pd.arrays.IntegerArray(values[trace.events], ~present[trace.events])
    return out


def events_frame(
    trace: HostTrace,
    thread_of_line: dict[int, int],
    python_threads: set[int],
    times: tuple[np.ndarray, np.ndarray],
) -> pd.DataFrame:
    """``thread_of_line``: row of space.lines -> thread key; ``python_threads``: their keys."""
    counts = trace.space.lines["n_events"][trace.line_rows]
    line_thread = np.array([thread_of_line[int(r)] for r in trace.line_rows], dtype=np.int32)
    thread = np.repeat(line_thread, counts)
    codes, categories = _metadata_codes(trace)
    names = pd.Categorical.from_codes(codes, categories)
    on_python = np.repeat(np.isin(line_thread, list(python_threads)), counts)
    kind, op_name, op_type, op_kernel = classify(names, on_python)
    start, end = times
    df = pd.DataFrame(
        {
            "thread": thread,
            "name": names,
            "op_name": op_name,
            "op_type": op_type,
            "op_kernel": op_kernel,
            "kind": kind,
            "start_ns": start,
            "end_ns": end,
            **_flow_columns(trace),
        },
        copy=False,
    )
    return validate(df, EVENTS)
