"""The pure-Python XSpace decoder: protobuf messages in, the same tables as the C pass out.

Two uses: the fallback of :func:`.decode.decode` when the C extension is not built, and
the oracle the extension is tested against. It is deliberately the obvious loop over parsed
messages (``XSpace.FromString``, then planes > lines > events > stats), so that it shares no
code with the wire-format walk it checks, and it is several times slower than the parse.

One difference is unavoidable: protobuf messages do not say where in the input a string came
from, so string and bytes stat values are copied into a new buffer and ``data`` is that buffer
(``str_start`` points into it). Compare values with ``DecodedSpace.stat_bytes``, not offsets.

Promoted event stats (``event_stats``) are filled as each event's stats are read, by looking
their metadata id up in the plane's map: the same rule as the C pass (last stat wins, integer
kinds only), by a different route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tftrace.analysis.xplane import schema as xplane_proto
from tftrace.analysis.xplane.columns import (
    EVENT_COLUMNS,
    INTEGER_KINDS,
    LINE_COLUMNS,
    STAT_COLUMNS,
    DecodedPlane,
    DecodedSpace,
    EventStatColumn,
    PlaneFilter,
    StatKind,
    XPlaneDecodeError,
    decoded_plane,
    promoted_ids,
    promoted_names,
)

_KIND_OF_FIELD = {
    None: StatKind.UNSET,
    "double_value": StatKind.DOUBLE,
    "uint64_value": StatKind.UINT64,
    "int64_value": StatKind.INT64,
    "str_value": StatKind.STR,
    "bytes_value": StatKind.BYTES,
    "ref_value": StatKind.REF,
}
_TWO_64 = 1 << 64


class _Tables:
    """Python lists per column, turned into numpy arrays once at the end."""

    def __init__(self, promoted: list[str], keep_stats: bool) -> None:
        self.keep_stats = keep_stats  # False: the stats table stays empty
        self.promoted = promoted  # names of the event stat columns
        self.promoted_values: list[list[int]] = [[] for _ in promoted]
        self.promoted_present: list[list[bool]] = [[] for _ in promoted]
        self.column_of_id: dict[int, int] = {}  # the current plane's promoted stat ids
        self.lines: dict[str, list[int]] = {name: [] for name in LINE_COLUMNS}
        self.events: dict[str, list[int]] = {name: [] for name in EVENT_COLUMNS}
        self.stats: dict[str, list[Any]] = {name: [] for name in STAT_COLUMNS}
        self.line_names: list[str] = []
        self.line_display_names: list[str] = []
        self.strings = bytearray()

    def add_plane(self, plane_row: int, plane: Any) -> None:
        names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        self.column_of_id = dict(promoted_ids(names, self.promoted))
        for line in plane.lines:
            self.add_line(plane_row, line)

    def add_line(self, plane_row: int, line: Any) -> None:
        row = len(self.line_names)
        first_event = len(self.events["line"])
        for event in line.events:
            self.add_event(row, event)
        columns = self.lines
        columns["plane"].append(plane_row)
        columns["id"].append(line.id)
        columns["display_id"].append(line.display_id)
        columns["timestamp_ns"].append(line.timestamp_ns)
        columns["duration_ps"].append(line.duration_ps)
        columns["n_events"].append(len(self.events["line"]) - first_event)
        columns["first_event"].append(first_event)
        self.line_names.append(line.name)
        self.line_display_names.append(line.display_name)

    def add_event(self, line_row: int, event: Any) -> None:
        row = len(self.events["line"])
        first_stat = len(self.stats["event"])
        values = [0] * len(self.promoted)
        present = [False] * len(self.promoted)
        for stat in event.stats:
            if self.keep_stats:
                self.add_stat(row, stat)
            column = self.column_of_id.get(stat.metadata_id)
            if column is not None:  # a later stat of the same name replaces an earlier one
                kind, int_value = _kind_and_int(stat)
                present[column] = kind in INTEGER_KINDS
                values[column] = int_value
        for column, (value, flag) in enumerate(zip(values, present, strict=True)):
            self.promoted_values[column].append(value)
            self.promoted_present[column].append(flag)
        columns = self.events
        columns["line"].append(line_row)
        columns["metadata_id"].append(event.metadata_id)
        columns["offset_ps"].append(event.offset_ps)  # 0 when num_occurrences is set
        columns["duration_ps"].append(event.duration_ps)
        columns["num_occurrences"].append(event.num_occurrences)
        columns["first_stat"].append(first_stat)
        columns["n_stats"].append(len(self.stats["event"]) - first_stat)

    def add_stat(self, event_row: int, stat: Any) -> None:
        kind, int_value = _kind_and_int(stat)
        double_value, start, length = 0.0, 0, 0
        if kind is StatKind.DOUBLE:
            double_value = stat.double_value
        elif kind in (StatKind.STR, StatKind.BYTES):
            raw = stat.str_value.encode() if kind is StatKind.STR else stat.bytes_value
            start, length = len(self.strings), len(raw)
            self.strings += raw
        columns = self.stats
        columns["event"].append(event_row)
        columns["metadata_id"].append(stat.metadata_id)
        columns["kind"].append(int(kind))
        columns["int_value"].append(int_value)
        columns["double_value"].append(double_value)
        columns["str_start"].append(start)
        columns["str_len"].append(length)


def _kind_and_int(stat: Any) -> tuple[StatKind, int]:
    """Which value an XStat holds, and that value if it is an integer kind (else 0)."""
    field = stat.WhichOneof("value")
    kind = _KIND_OF_FIELD[field]
    if kind not in INTEGER_KINDS:
        return kind, 0
    value: int = getattr(stat, field)
    return kind, value - _TWO_64 if value >= 1 << 63 else value  # uint64 and refs, bit-cast


def _read_only(values: list[Any], dtype: type[np.generic]) -> np.ndarray:
    """A read-only array, like the native decoder's buffers."""
    array = np.array(values, dtype=dtype)
    array.setflags(write=False)
    return array


def _arrays(columns: dict[str, list[Any]], spec: dict[str, type[np.generic]]) -> dict[str, Any]:
    return {name: _read_only(columns[name], dtype) for name, dtype in spec.items()}


def _event_stat_columns(tables: _Tables) -> dict[str, EventStatColumn]:
    return {
        name: (np.array(values, dtype=np.int64), np.array(present, dtype=np.bool_))
        for name, values, present in zip(
            tables.promoted, tables.promoted_values, tables.promoted_present, strict=True
        )
    }


def decode_reference(
    data: bytes,
    *,
    planes: PlaneFilter | None = None,
    event_stats: Sequence[str] = (),
    stats: bool = True,
) -> DecodedSpace:
    """Same contract as :func:`.decode.decode`; errors carry no byte offset."""
    try:
        space = xplane_proto.XSpace.FromString(data)
    except DecodeError as e:
        raise XPlaneDecodeError(f"not a valid XSpace ({e})") from None
    tables = _Tables(promoted_names(event_stats), stats)
    kept: list[DecodedPlane] = []
    for plane in space.planes:
        if planes is not None and not planes(plane.name):
            continue
        tables.add_plane(len(kept), plane)
        kept.append(decoded_plane(len(kept), plane))
    return DecodedSpace(
        planes=kept,
        hostnames=list(space.hostnames),
        lines=_arrays(tables.lines, LINE_COLUMNS),
        line_names=tables.line_names,
        line_display_names=tables.line_display_names,
        events=_arrays(tables.events, EVENT_COLUMNS),
        stats=_arrays(tables.stats, STAT_COLUMNS),
        data=bytes(tables.strings),
        event_stat_columns=_event_stat_columns(tables),
    )
