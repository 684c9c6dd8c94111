"""Decode a TF profiler trace (``*.xplane.pb``, an ``XSpace`` protobuf) into numpy columns.

A trace of a few seconds holds millions of events. Parsing it into protobuf objects is fast
(upb, in C), but reading those objects back from Python, one attribute at a time, is several
times slower than the parse. So the lines, events and stats of every plane are decoded in one
pass over the wire format by a small C extension (``_xplane_wire``) into column arrays; only
the small per-plane maps (event and stat metadata) and the XSpace's own fields go through the
protobuf classes of :mod:`.xplane_proto`. Without the extension, :mod:`.xplane_reference`
builds the same result by looping over protobuf messages (slow, but needs no compiler).

Tables (dicts of equally long numpy arrays), parents before children, rows of one parent
contiguous and in file order:

- ``lines``: one row per XLine; ``plane`` is the position in ``DecodedSpace.planes``;
  ``first_event``/``n_events`` select its rows of ``events``.
- ``events``: one row per XEvent; ``line`` is its row of ``lines``; ``num_occurrences`` is 0
  when absent (``offset_ps`` and ``num_occurrences`` are a oneof); ``first_stat``/``n_stats``
  select its rows of ``stats``.
- ``stats``: one row per XStat of an event; ``kind`` says which value field was set (see
  :class:`StatKind`); integers (int64, uint64 bit-cast, ref ids) are in ``int_value``; string
  and bytes values are ``data[str_start:str_start + str_len]`` (sliced on demand, since most
  are never read).

And one pair of per-event columns for each stat named in ``decode(event_stats=...)``:
``event_stat_columns[name]`` is ``(values, present)``, int64 and bool, one row per ``events``
row. The stats every analysis reads (the flow ids) are promoted this way inside the single pass,
because scattering them out of the ``stats`` table afterwards, even vectorised, costs about as
much as the pass itself. An event's value is its last stat with that name (protobuf's "last
one wins"); only integer kinds (int64, uint64 bit-cast, ref ids) count: any other value, or
none, leaves ``present`` False and the value 0. Unlike the other tables these arrays are
writable and handed over: their consumer may adopt them as its own columns without a copy
(``load()`` gives the flow ids to pandas this way; a copy of each would cost as much again).

``decode(stats=False)`` leaves the ``stats`` table empty (``first_stat`` and ``n_stats`` 0) for
callers that read event stats only through promoted columns, as ``load()`` does: stats are
still parsed, checked and promoted, just not stored. At ~45 bytes a row it is the largest
table (140 MB for a 2 M-event trace), and filling fresh memory costs more than decoding what
goes into it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from . import xplane_proto

PlaneFilter = Callable[[str], bool]

LINE_COLUMNS: dict[str, type[np.generic]] = {
    "plane": np.int32,
    "id": np.int64,
    "display_id": np.int64,
    "timestamp_ns": np.int64,
    "duration_ps": np.int64,
    "n_events": np.int64,
    "first_event": np.int64,
}
EVENT_COLUMNS: dict[str, type[np.generic]] = {
    "line": np.int32,
    "metadata_id": np.int64,
    "offset_ps": np.int64,
    "duration_ps": np.int64,
    "num_occurrences": np.int64,
    "first_stat": np.int64,
    "n_stats": np.int32,
}
STAT_COLUMNS: dict[str, type[np.generic]] = {
    "event": np.int64,
    "metadata_id": np.int64,
    "kind": np.uint8,
    "int_value": np.int64,
    "double_value": np.float64,
    "str_start": np.int64,
    "str_len": np.int32,
}

# The C extension's interface version this module speaks (WIRE_ABI in _xplane_wire.c).
_WIRE_ABI = 2


class StatKind(enum.IntEnum):
    """Which field of XStat's ``value`` oneof is set (``stats["kind"]``)."""

    UNSET = 0
    DOUBLE = 1
    UINT64 = 2
    INT64 = 3
    STR = 4
    BYTES = 5
    REF = 6


# The kinds whose value is an integer (in ``int_value``): the ones event stat columns take.
INTEGER_KINDS = frozenset({StatKind.UINT64, StatKind.INT64, StatKind.REF})

# (values, present) of one promoted event stat; see the module docstring.
EventStatColumn = tuple[np.ndarray, np.ndarray]


class XPlaneDecodeError(ValueError):
    """The bytes are not a well-formed XSpace; says what is wrong and where."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{message}{where}")
        self.offset = offset


@dataclass(frozen=True)
class DecodedPlane:
    """One XPlane's identity and small maps; its lines are rows of ``DecodedSpace.lines``."""

    index: int  # position in DecodedSpace.planes, the value of lines["plane"]
    id: int
    name: str
    event_metadata: dict[int, tuple[str, str]]  # id -> (name, display_name)
    stat_metadata: dict[int, str]  # id -> name
    stats: dict[str, object]  # plane-level stats by name; ref values resolved to names


@dataclass(frozen=True, eq=False)
class DecodedSpace:
    """A whole trace as column tables (see the module docstring for the layout)."""

    planes: list[DecodedPlane]
    hostnames: list[str]
    lines: dict[str, np.ndarray]
    line_names: list[str]
    line_display_names: list[str]
    events: dict[str, np.ndarray]
    stats: dict[str, np.ndarray]
    data: bytes  # str/bytes stat values at (str_start, str_len); the input, when decoded in C
    event_stat_columns: dict[str, EventStatColumn]  # by stat name, as decode(event_stats=) asked

    def stat_bytes(self, row: int) -> bytes:
        """The raw value of a str or bytes stat (b"" for other kinds)."""
        start = int(self.stats["str_start"][row])
        return self.data[start : start + int(self.stats["str_len"][row])]

    def stat_value(self, row: int) -> object:
        """One event stat as a Python value, as ``DecodedPlane.stats`` gives plane stats."""
        kind = StatKind(int(self.stats["kind"][row]))
        if kind is StatKind.REF:
            line = self.events["line"][self.stats["event"][row]]
            plane = self.planes[int(self.lines["plane"][line])]
            return resolve_ref(plane.stat_metadata, int(self.stats["int_value"][row]))
        if kind is StatKind.DOUBLE:
            return float(self.stats["double_value"][row])
        if kind is StatKind.UINT64:
            return int(self.stats["int_value"][row]) & 0xFFFF_FFFF_FFFF_FFFF
        if kind is StatKind.INT64:
            return int(self.stats["int_value"][row])
        if kind is StatKind.STR:
            return self.stat_bytes(row).decode()
        if kind is StatKind.BYTES:
            return self.stat_bytes(row)
        return None


def resolve_ref(stat_metadata: dict[int, str], ref: int) -> object:
    """A ref_value names a stat_metadata entry used as an interned string; unknown ids stay ints."""
    return stat_metadata.get(ref, ref)


def stat_name(stat_metadata: dict[int, str], metadata_id: int) -> str:
    return stat_metadata.get(metadata_id, f"<stat {metadata_id}>")


def decoded_plane(index: int, plane: Any) -> DecodedPlane:
    """The small maps of an ``xplane_proto.XPlane`` (its lines are not read)."""
    stat_metadata = {key: meta.name for key, meta in sorted(plane.stat_metadata.items())}
    event_metadata = {
        key: (meta.name, meta.display_name) for key, meta in sorted(plane.event_metadata.items())
    }
    stats = {
        stat_name(stat_metadata, stat.metadata_id): message_stat_value(stat, stat_metadata)
        for stat in plane.stats
    }
    return DecodedPlane(index, plane.id, plane.name, event_metadata, stat_metadata, stats)


def message_stat_value(stat: Any, stat_metadata: dict[int, str]) -> object:
    """The value of an ``xplane_proto.XStat`` (None when no value field is set)."""
    field = stat.WhichOneof("value")
    if field is None:
        return None
    value = getattr(stat, field)
    return resolve_ref(stat_metadata, value) if field == "ref_value" else value


# ------------------------------------------------------------------------------------------
# Native path


def _load_wire() -> ModuleType | None:
    try:
        from . import _xplane_wire  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_xplane_wire, "ABI", None) != _WIRE_ABI:
        return None  # a stale build from an older source: do not trust its layout
    module: ModuleType = _xplane_wire
    return module


_wire = _load_wire()


def native_available() -> bool:
    """Whether the C extension is built (``pip install -e .`` builds it when a compiler exists)."""
    return _wire is not None


def _utf8(data: memoryview, start: int, length: int, what: str) -> str:
    try:
        return str(data[start : start + length], "utf-8")
    except UnicodeDecodeError as e:
        raise XPlaneDecodeError(f"{what} is not valid UTF-8", start + e.start) from None


def _parse_ranges(cls: Any, data: memoryview, ranges: Iterable[tuple[int, int]], what: str) -> Any:
    """Parses the concatenation of some fields of a message (protobuf merges repeated fields)."""
    ranges = list(ranges)
    try:
        return cls.FromString(b"".join(data[start:end] for start, end in ranges))
    except DecodeError as e:
        offset = ranges[0][0] if ranges else None
        raise XPlaneDecodeError(f"{what}: {e}", offset) from None


def _columns(buffers: dict[str, Any], spec: dict[str, type[np.generic]]) -> dict[str, np.ndarray]:
    return {name: np.frombuffer(buffers[name], dtype=dtype) for name, dtype in spec.items()}


def promoted_names(event_stats: Sequence[str]) -> list[str]:
    """The distinct names of ``decode(event_stats=...)``, in order (a str is refused: it
    would otherwise be read as one stat per character)."""
    if isinstance(event_stats, str):
        raise TypeError("event_stats must be a sequence of stat names, not a str")
    return list(dict.fromkeys(event_stats))


def promoted_ids(stat_metadata: dict[int, str], names: list[str]) -> list[tuple[int, int]]:
    """(stat metadata id, position in ``names``) of a plane's promoted stats, by id: a name
    may have several ids (then all of them fill its column)."""
    column = {name: k for k, name in enumerate(names)}
    return sorted((i, column[name]) for i, name in stat_metadata.items() if name in column)


def _decode_native(
    wire: ModuleType, data: bytes, planes: PlaneFilter | None, names: list[str], stats: bool
) -> DecodedSpace:
    view = memoryview(data)
    try:
        rest, outlines = wire.scan(data)
    except wire.WireError as e:
        raise XPlaneDecodeError(*e.args) from None
    selected: list[tuple[DecodedPlane, tuple[int, int]]] = []
    for position, (start, end, name_start, name_end, plane_rest) in enumerate(outlines):
        name = "" if name_start < 0 else _utf8(view, name_start, name_end - name_start, "name")
        if planes is None or planes(name):
            message = _parse_ranges(xplane_proto.XPlane, view, plane_rest, f"plane {position}")
            selected.append((decoded_plane(len(selected), message), (start, end)))
    space = _parse_ranges(xplane_proto.XSpace, view, rest, "XSpace")
    keys = [promoted_ids(plane.stat_metadata, names) for plane, _ in selected]
    try:
        lines, events, stat_rows, promoted = wire.decode(
            data, [span for _, span in selected], len(names), keys, stats
        )
    except wire.WireError as e:
        raise XPlaneDecodeError(*e.args) from None
    line_names = _line_strings(view, lines, "name")
    display_names = _line_strings(view, lines, "display_name")
    return DecodedSpace(
        planes=[plane for plane, _ in selected],
        hostnames=list(space.hostnames),
        lines=_columns(lines, LINE_COLUMNS),
        line_names=line_names,
        line_display_names=display_names,
        events=_columns(events, EVENT_COLUMNS),
        stats=_columns(stat_rows, STAT_COLUMNS),
        data=data,
        event_stat_columns={
            name: (np.frombuffer(values, dtype=np.int64), np.frombuffer(present, dtype=np.bool_))
            for name, (values, present) in zip(names, promoted, strict=True)
        },
    )


def _line_strings(view: memoryview, lines: dict[str, Any], field: str) -> list[str]:
    starts = np.frombuffer(lines[f"{field}_start"], dtype=np.int64).tolist()
    lengths = np.frombuffer(lines[f"{field}_len"], dtype=np.int64).tolist()
    return [_utf8(view, s, n, f"XLine.{field}") for s, n in zip(starts, lengths, strict=True)]


# ------------------------------------------------------------------------------------------
# Entry point


def decode(
    data: bytes | bytearray | memoryview,
    *,
    planes: PlaneFilter | None = None,
    event_stats: Sequence[str] = (),
    stats: bool = True,
    prefer_native: bool = True,
) -> DecodedSpace:
    """Decode an XSpace; ``planes`` (a predicate on plane names) picks the planes to keep.

    ``event_stats`` names stats (by their stat metadata name, in every kept plane) to promote
    into per-event columns, ``DecodedSpace.event_stat_columns``; ``stats=False`` skips the
    stats table (see the module docstring for both).

    Uses the C extension when it is built and ``prefer_native``, the pure-Python reference
    decoder otherwise. Both give the same tables and values; only ``data`` differs (the C path
    keeps the input, so string stats cost nothing until read; the reference copies them into a
    buffer of their own). Raises :class:`XPlaneDecodeError` on malformed input (the C path is
    the stricter: a known field with the wrong wire type is an error there, while protobuf
    keeps it as an unknown field).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    names = promoted_names(event_stats)
    if prefer_native and _wire is not None:
        return _decode_native(_wire, data, planes, names, stats)
    from .xplane_reference import decode_reference

    return decode_reference(data, planes=planes, event_stats=names, stats=stats)


__all__ = [
    "EVENT_COLUMNS",
    "INTEGER_KINDS",
    "LINE_COLUMNS",
    "STAT_COLUMNS",
    "DecodedPlane",
    "DecodedSpace",
    "EventStatColumn",
    "StatKind",
    "XPlaneDecodeError",
    "decode",
    "native_available",
]
