"""The decoded trace's layout: column tables of lines, events and stats, shared by both decoders.

Decode a TF profiler trace (``*.xplane.pb``, an ``XSpace`` protobuf) into numpy columns.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

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
