"""decode(): the C pass agrees with the pure-Python reference and with TF's own parser, and
refuses malformed or hostile input with XPlaneDecodeError instead of crashing."""

from __future__ import annotations

import json
import math
import random
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import ROOT, quiet_env
from tftrace.analysis.xplane import schema as xp
from tftrace.analysis.xplane.columns import (
    EVENT_COLUMNS,
    INTEGER_KINDS,
    LINE_COLUMNS,
    STAT_COLUMNS,
    DecodedSpace,
    StatKind,
    XPlaneDecodeError,
)
from tftrace.analysis.xplane.decode import decode, native_available
from tftrace.analysis.xplane.reference import decode_reference

TESTS = ROOT / "tests"
needs_native = pytest.mark.skipif(not native_available(), reason="C extension not built")


def native(data: bytes, **kw: Any) -> DecodedSpace:
    return decode(data, **kw)


def reference(data: bytes, **kw: Any) -> DecodedSpace:
    return decode(data, prefer_native=False, **kw)


DECODERS = [
    pytest.param(native, id="native", marks=needs_native),
    pytest.param(reference, id="reference"),
]


def differences(a: DecodedSpace, b: DecodedSpace) -> list[str]:
    """What differs between two decodes of one trace (empty when they agree).

    Arrays are compared bit for bit (so NaNs compare); string values by content, since the
    reference decoder's ``data`` is its own buffer of strings.
    """
    out = []
    if a.planes != b.planes and repr(a.planes) != repr(b.planes):  # repr: NaN plane stats
        out.append("planes")
    for name in ("hostnames", "line_names", "line_display_names"):
        if getattr(a, name) != getattr(b, name):
            out.append(name)
    for table in ("lines", "events", "stats"):
        x, y = getattr(a, table), getattr(b, table)
        if x.keys() != y.keys():
            out.append(f"{table}: columns {sorted(x)} != {sorted(y)}")
            continue
        for column in x:
            u, v = x[column], y[column]
            if u.dtype != v.dtype or u.shape != v.shape:
                out.append(f"{table}.{column}: {u.dtype}{u.shape} != {v.dtype}{v.shape}")
            elif column != "str_start" and u.tobytes() != v.tobytes():
                rows = np.flatnonzero(u.view(np.uint8) != v.view(np.uint8))
                out.append(f"{table}.{column} differs (first byte {rows[0]})")
    out += event_stat_differences(a, b)
    if not out:
        strings = np.flatnonzero(a.stats["str_len"] > 0)
        bad = [int(r) for r in strings if a.stat_bytes(r) != b.stat_bytes(r)]
        if bad:
            out.append(f"string values differ at stat rows {bad[:5]}")
    return out


def event_stat_differences(a: DecodedSpace, b: DecodedSpace) -> list[str]:
    """What differs between the promoted event stat columns of two decodes."""
    x, y = a.event_stat_columns, b.event_stat_columns
    if list(x) != list(y):
        return [f"event_stat_columns: {list(x)} != {list(y)}"]
    out = []
    for name in x:
        for part, u, v in zip(("values", "present"), x[name], y[name], strict=True):
            if u.dtype != v.dtype or u.shape != v.shape or u.tobytes() != v.tobytes():
                out.append(f"event_stat_columns[{name!r}] {part} differ")
    return out


def lean_differences(full: DecodedSpace, lean: DecodedSpace) -> list[str]:
    """What differs between decodes with and without the stats table, beyond that table
    (empty in ``lean``) and the events' stat rows (0 there)."""
    out = [f"stats.{c} has rows" for c, a in lean.stats.items() if len(a)]
    out += [f"events.{c} not 0" for c in ("first_stat", "n_stats") if lean.events[c].any()]
    dtypes = {c: np.dtype(t) for c, t in STAT_COLUMNS.items()}
    if {c: a.dtype for c, a in lean.stats.items()} != dtypes:
        out.append("stats dtypes")
    for column in ("line", "metadata_id", "offset_ps", "duration_ps", "num_occurrences"):
        if full.events[column].tobytes() != lean.events[column].tobytes():
            out.append(f"events.{column} differs")
    for column in full.lines:
        if full.lines[column].tobytes() != lean.lines[column].tobytes():
            out.append(f"lines.{column} differs")
    if (full.planes, full.line_names) != (lean.planes, lean.line_names):
        out.append("planes or line names differ")
    return out + event_stat_differences(full, lean)


def scattered_event_stats(space: DecodedSpace, names: list[str]) -> dict[str, tuple[list, list]]:
    """The promoted columns rebuilt from the stats table by a plain loop: the rule stated
    once more (last stat of the name wins; only integer kinds are values), for comparison."""
    n = len(space.events["line"])
    out = {name: ([0] * n, [False] * n) for name in names}
    for row in range(len(space.stats["event"])):
        event = int(space.stats["event"][row])
        plane = space.planes[int(space.lines["plane"][space.events["line"][event]])]
        name = plane.stat_metadata.get(int(space.stats["metadata_id"][row]))
        if name in out:
            values, present = out[name]
            is_int = int(space.stats["kind"][row]) in INTEGER_KINDS
            values[event] = int(space.stats["int_value"][row]) if is_int else 0
            present[event] = is_int
    return out


def as_lists(space: DecodedSpace) -> dict[str, tuple[list, list]]:
    return {
        name: (values.tolist(), present.tolist())
        for name, (values, present) in space.event_stat_columns.items()
    }


# --------------------------------------------------------------------------------------------
# Wire-format helpers for hand-made input


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def vfield(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def lfield(number: int, body: bytes) -> bytes:
    return tag(number, 2) + varint(len(body)) + body


def space_of(event: bytes, line_extra: bytes = b"", plane_extra: bytes = b"") -> bytes:
    """An XSpace with one plane, one line, one event (given as its encoded fields)."""
    line = vfield(1, 1) + lfield(2, b"line") + lfield(4, event) + line_extra
    return lfield(1, lfield(2, b"plane") + lfield(3, line) + plane_extra)


# --------------------------------------------------------------------------------------------
# (c) Hand-built traces


def handmade_space() -> bytes:
    space = xp.XSpace(hostnames=["host-a", "hôte-b"], errors=["e"], warnings=["w"])
    host = space.planes.add(id=7, name="/host:CPU")
    names = ["dbl", "u64", "i64", "str", "bytes", "ref", "unset", "interned", "inf"]
    for i, name in enumerate(names, 1):
        host.stat_metadata[i].id = i
        host.stat_metadata[i].name = name
    host.event_metadata[10].name = "MatMul:_MklMatMul"
    host.event_metadata[10].display_name = "MatMul"
    host.event_metadata[11].name = "Counter"
    host.stats.add(metadata_id=1, double_value=0.5)
    host.stats.add(metadata_id=6, ref_value=8)
    host.stats.add(metadata_id=4, str_value="plane ✓")
    line = host.lines.add(id=-5, display_id=2, name="tf_Compute/-5", display_name="Compute")
    line.timestamp_ns = 1_000
    line.duration_ps = 9_999
    event = line.events.add(metadata_id=10, offset_ps=1_500, duration_ps=2_500)
    event.stats.add(metadata_id=1, double_value=-1.5e300)
    event.stats.add(metadata_id=2, uint64_value=2**64 - 1)
    event.stats.add(metadata_id=3, int64_value=-(2**63))
    event.stats.add(metadata_id=4, str_value="naïve ✓")
    event.stats.add(metadata_id=5, bytes_value=b"\xff\x00raw")
    event.stats.add(metadata_id=6, ref_value=8)
    event.stats.add(metadata_id=7)
    event.stats.add(metadata_id=9, double_value=math.inf)
    line.events.add(metadata_id=11, num_occurrences=3, duration_ps=7)
    host.lines.add(id=2, name="no events")
    task = space.planes.add(id=8, name="Task Environment")
    task.stat_metadata[1].name = "profile_start_time"
    task.stats.add(metadata_id=1, uint64_value=1_700_000_000_000_000_000)
    line = task.lines.add(id=3, name="other")
    line.events.add(metadata_id=1, offset_ps=5)
    data: bytes = space.SerializeToString()
    return data


@pytest.mark.parametrize("decoder", DECODERS)
def test_handmade_space_every_stat_kind(decoder: Callable[..., DecodedSpace]):
    space = decoder(handmade_space())
    assert space.hostnames == ["host-a", "hôte-b"]
    host, task = space.planes
    assert (host.index, host.id, host.name) == (0, 7, "/host:CPU")
    assert host.event_metadata == {10: ("MatMul:_MklMatMul", "MatMul"), 11: ("Counter", "")}
    assert host.stats == {"dbl": 0.5, "ref": "interned", "str": "plane ✓"}
    assert task.stats == {"profile_start_time": 1_700_000_000_000_000_000}
    assert space.line_names == ["tf_Compute/-5", "no events", "other"]
    assert space.line_display_names == ["Compute", "", ""]
    lines = {k: v.tolist() for k, v in space.lines.items()}
    assert lines == {
        "plane": [0, 0, 1],
        "id": [-5, 2, 3],
        "display_id": [2, 0, 0],
        "timestamp_ns": [1_000, 0, 0],
        "duration_ps": [9_999, 0, 0],
        "n_events": [2, 0, 1],
        "first_event": [0, 2, 2],
    }
    events = {k: v.tolist() for k, v in space.events.items()}
    assert events == {
        "line": [0, 0, 2],
        "metadata_id": [10, 11, 1],
        "offset_ps": [1_500, 0, 5],
        "duration_ps": [2_500, 7, 0],
        "num_occurrences": [0, 3, 0],
        "first_stat": [0, 8, 8],
        "n_stats": [8, 0, 0],
    }
    stats = space.stats
    assert stats["event"].tolist() == [0] * 8
    assert stats["kind"].tolist() == [1, 2, 3, 4, 5, 6, 0, 1]
    assert stats["int_value"].tolist() == [0, -1, -(2**63), 0, 0, 8, 0, 0]
    assert stats["double_value"][[0, 7]].tolist() == [-1.5e300, math.inf]
    values = [space.stat_value(row) for row in range(8)]
    expected = [-1.5e300, 2**64 - 1, -(2**63), "naïve ✓", b"\xff\x00raw", "interned", None]
    assert values == [*expected, math.inf]
    assert {c: a.dtype for c, a in space.stats.items()} == {
        c: np.dtype(t) for c, t in STAT_COLUMNS.items()
    }


HANDMADE_PROMOTED = ("u64", "i64", "ref", "dbl", "str", "bytes", "unset", "nowhere", "interned")


@pytest.mark.parametrize("decoder", DECODERS)
def test_event_stats_of_every_kind(decoder: Callable[..., DecodedSpace]):
    """Integer kinds become values (uint64 bit-cast, ref ids as ids); others stay absent."""
    space = decoder(handmade_space(), event_stats=HANDMADE_PROMOTED)
    assert list(space.event_stat_columns) == list(HANDMADE_PROMOTED)
    got = as_lists(space)
    assert got["u64"] == ([-1, 0, 0], [True, False, False])
    assert got["i64"] == ([-(2**63), 0, 0], [True, False, False])
    assert got["ref"] == ([8, 0, 0], [True, False, False])
    for name in ("dbl", "str", "bytes", "unset", "nowhere", "interned"):
        assert got[name] == ([0, 0, 0], [False, False, False]), name
    assert got == scattered_event_stats(space, list(HANDMADE_PROMOTED))
    for values, present in space.event_stat_columns.values():
        assert (values.dtype, present.dtype) == (np.dtype(np.int64), np.dtype(np.bool_))


def promotion_space() -> bytes:
    """Two planes whose stat ids differ, a name with several ids, repeated and odd stats."""
    space = xp.XSpace()
    a = space.planes.add(name="a")
    for key, name in ((5, "flow"), (-3, "flow"), (2**63 - 1, "flow"), (7, "other")):
        a.stat_metadata[key].name = name
    line = a.lines.add(id=1)
    events: list[list[dict[str, Any]]] = [
        [{"metadata_id": 5, "int64_value": 1}, {"metadata_id": -3, "int64_value": 2}],
        [{"metadata_id": 5, "int64_value": 3}, {"metadata_id": 5, "str_value": "x"}],
        [
            {"metadata_id": 5, "str_value": "x"},
            {"metadata_id": 2**63 - 1, "uint64_value": 2**64 - 2},
        ],
        [{"metadata_id": 7, "int64_value": 9}],
        [{"metadata_id": 5, "ref_value": 4}, {"metadata_id": 5}],  # no value: not an integer
        [{"metadata_id": 1, "int64_value": 10}],  # id 1 is "flow" in plane b only
        [],
    ]
    for stats in events:
        event = line.events.add(metadata_id=1)
        for stat in stats:
            event.stats.add(**stat)
    b = space.planes.add(name="b")
    b.stat_metadata[1].name = "flow"
    line = b.lines.add(id=2)
    line.events.add(metadata_id=1).stats.add(metadata_id=1, int64_value=11)
    line.events.add(metadata_id=1).stats.add(metadata_id=5, int64_value=12)
    data: bytes = space.SerializeToString()
    return data


@pytest.mark.parametrize("decoder", DECODERS)
def test_event_stats_last_wins_per_plane_ids(decoder: Callable[..., DecodedSpace]):
    space = decoder(promotion_space(), event_stats=["flow", "other", "flow"])
    assert list(space.event_stat_columns) == ["flow", "other"]  # duplicates collapse
    got = as_lists(space)
    assert got["flow"] == (
        [2, 0, -2, 0, 0, 0, 0, 11, 0],
        [True, False, True, False, False, False, False, True, False],
    )
    assert got["other"] == ([0, 0, 0, 9, 0, 0, 0, 0, 0], [False] * 3 + [True] + [False] * 5)
    assert got == scattered_event_stats(space, ["flow", "other"])
    only_b = decoder(promotion_space(), planes=lambda name: name == "b", event_stats=["flow"])
    assert as_lists(only_b) == {"flow": ([11, 0], [True, False])}


@needs_native
@pytest.mark.parametrize("make", [handmade_space, promotion_space])
def test_event_stats_native_equals_reference(make: Callable[[], bytes]):
    names = [*HANDMADE_PROMOTED, "flow", "other", "profile_start_time"]
    for options in ({"event_stats": names}, {"event_stats": names, "stats": False}):
        assert differences(native(make(), **options), reference(make(), **options)) == []


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("make", [handmade_space, promotion_space])
def test_without_the_stats_table(decoder: Callable[..., DecodedSpace], make: Callable[[], bytes]):
    """stats=False: the same lines, events and promoted columns, no stats rows."""
    names = [*HANDMADE_PROMOTED, "flow", "other"]
    full = decoder(make(), event_stats=names)
    lean = decoder(make(), event_stats=names, stats=False)
    assert len(full.stats["event"]) > 0
    assert lean_differences(full, lean) == []


@pytest.mark.parametrize("decoder", DECODERS)
def test_event_stats_default_and_bad_argument(decoder: Callable[..., DecodedSpace]):
    assert decoder(handmade_space()).event_stat_columns == {}
    empty = decoder(b"", event_stats=["_p"]).event_stat_columns
    assert [(k, len(v), len(p)) for k, (v, p) in empty.items()] == [("_p", 0, 0)]
    with pytest.raises(TypeError, match="not a str"):
        decoder(handmade_space(), event_stats="_p")


@needs_native
@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((1, [[(1, 0)]]), "1 items for 0 planes"),  # one plane's keys, no plane
        ((1, 5), "sequence with one item per plane"),
        ((-1, None), "outside"),
        ((10**6, None), "outside"),
    ],
)
def test_wire_decode_refuses_bad_keys_without_planes(args: tuple, error: str):
    from tftrace.analysis.xplane import _wire as wire  # type: ignore[attr-defined]

    with pytest.raises((TypeError, ValueError), match=error):
        wire.decode(b"", [], *args)


@needs_native
def test_wire_decode_without_keys_promotes_nothing():
    from tftrace.analysis.xplane import _wire as wire  # type: ignore[attr-defined]

    data = promotion_space()
    _, outlines = wire.scan(data)
    _, events, _, promoted = wire.decode(data, [o[:2] for o in outlines], 2)
    n = len(np.frombuffer(events["line"], dtype=np.int32))
    assert n == 9 and len(promoted) == 2
    for values, present in promoted:
        assert np.frombuffer(values, dtype=np.int64).tolist() == [0] * n
        assert np.frombuffer(present, dtype=np.bool_).tolist() == [False] * n


@needs_native
@pytest.mark.parametrize(
    ("keys", "error"),
    [
        ([[(1, 0), (1, 0)]], "strictly increasing"),
        ([[(2, 0), (1, 0)]], "strictly increasing"),
        ([[(1, 1)]], "outside"),
        ([[(1, -1)]], "outside"),
        ([[(2**63, 0)]], "too big|overflow|out of range"),
        ([[(1, 0, 0)]], "pairs"),
        ([[[1, 0]]], "pairs"),
        ([["ab"]], "pairs"),
        ([None], "pairs"),
        ([[(1.5, 0)]], "integer"),
    ],
)
def test_wire_decode_refuses_bad_keys(keys: list, error: str):
    from tftrace.analysis.xplane import _wire as wire  # type: ignore[attr-defined]

    data = promotion_space()
    _, outlines = wire.scan(data)
    with pytest.raises((TypeError, ValueError, OverflowError), match=error):
        wire.decode(data, [outlines[0][:2]], 1, keys)


@pytest.mark.parametrize("decoder", DECODERS)
def test_plane_filter_keeps_only_matching_planes(decoder: Callable[..., DecodedSpace]):
    space = decoder(handmade_space(), planes=lambda name: name == "Task Environment")
    assert [(p.index, p.name) for p in space.planes] == [(0, "Task Environment")]
    assert space.line_names == ["other"]
    assert space.lines["plane"].tolist() == [0]
    assert space.events["line"].tolist() == [0]
    assert len(space.stats["kind"]) == 0


@pytest.mark.parametrize("decoder", DECODERS)
def test_empty_input_is_an_empty_space(decoder: Callable[..., DecodedSpace]):
    space = decoder(b"")
    assert space.planes == [] and space.hostnames == [] and space.line_names == []
    for table, spec in ((space.lines, LINE_COLUMNS), (space.events, EVENT_COLUMNS)):
        assert {c: (a.dtype, len(a)) for c, a in table.items()} == {
            c: (np.dtype(t), 0) for c, t in spec.items()
        }


@pytest.mark.parametrize("wrap", [bytearray, memoryview])
def test_accepts_any_bytes_like(wrap: Callable[[bytes], Any]):
    data = handmade_space()
    assert differences(decode(wrap(data)), decode(data)) == []


def test_columns_are_read_only_but_promoted_stats():
    """The promoted columns are handed over: load() adopts them without a copy."""
    for decoder in (native, reference) if native_available() else (reference,):
        space = decoder(handmade_space(), event_stats=["u64"])
        with pytest.raises(ValueError, match="read-only"):
            space.events["offset_ps"][0] = 1
        values, present = space.event_stat_columns["u64"]
        values[0], present[0] = 5, False


# Unknown fields of every wire type, in every message: skipped.
UNKNOWN = (
    vfield(90, 2**63) + tag(91, 1) + b"8bytes!!" + lfield(92, b"skip me") + tag(93, 5) + b"4byt"
)


@pytest.mark.parametrize("decoder", DECODERS)
def test_unknown_fields_are_skipped(decoder: Callable[..., DecodedSpace]):
    stat = vfield(1, 4) + vfield(4, 42)
    plain = space_of(vfield(1, 3) + lfield(4, stat))
    noisy = UNKNOWN + lfield(
        1,
        UNKNOWN
        + lfield(2, b"plane")
        + lfield(
            3,
            vfield(1, 1)
            + UNKNOWN
            + lfield(2, b"line")
            + lfield(4, vfield(1, 3) + UNKNOWN + lfield(4, UNKNOWN + stat + UNKNOWN)),
        ),
    )
    assert differences(decoder(noisy), decoder(plain)) == []
    assert decoder(noisy).stats["int_value"].tolist() == [42]


@pytest.mark.parametrize("decoder", DECODERS)
def test_oneofs_last_field_wins(decoder: Callable[..., DecodedSpace]):
    events = [
        vfield(2, 5) + vfield(5, 3),  # offset_ps, then num_occurrences
        vfield(5, 3) + vfield(2, 5),
        lfield(4, vfield(4, 7) + lfield(5, b"s")),  # int64_value, then str_value
        lfield(4, lfield(5, b"s") + vfield(4, 7)),
        lfield(4, vfield(3, 1) + tag(2, 1) + struct.pack("<d", 2.5)),
        vfield(1, 9) + vfield(1, 4) + vfield(3, 1) + vfield(3, 2),  # plain fields: last wins
    ]
    line = b"".join(lfield(4, e) for e in events)
    space = decoder(lfield(1, lfield(3, line)))
    assert space.events["offset_ps"].tolist() == [0, 5, 0, 0, 0, 0]
    assert space.events["num_occurrences"].tolist() == [3, 0, 0, 0, 0, 0]
    assert space.events["metadata_id"].tolist()[-1] == 4
    assert space.events["duration_ps"].tolist()[-1] == 2
    assert space.stats["kind"].tolist() == [StatKind.STR, StatKind.INT64, StatKind.DOUBLE]
    assert [space.stat_value(r) for r in range(3)] == ["s", 7, 2.5]
    assert space.stats["str_len"].tolist() == [1, 0, 0]


@pytest.mark.parametrize("decoder", DECODERS)
def test_plane_fields_in_any_order(decoder: Callable[..., DecodedSpace]):
    """TF writes id, name, lines, then the maps; any order (and repeats) must decode the same."""
    entry = vfield(1, 5) + lfield(2, lfield(2, b"flow"))  # stat_metadata {5: {name: "flow"}}
    line_a = lfield(2, b"a") + lfield(4, lfield(4, vfield(1, 5) + vfield(7, 5)))
    plane = (
        lfield(3, line_a)
        + lfield(2, b"first name")
        + lfield(5, entry)
        + lfield(3, lfield(2, b"b"))
        + vfield(1, 42)
        + lfield(2, b"/host:CPU")
    )
    space = decoder(lfield(4, b"h") + lfield(1, plane) + lfield(1, lfield(2, b"other")))
    assert [(p.id, p.name) for p in space.planes] == [(42, "/host:CPU"), (0, "other")]
    assert space.hostnames == ["h"]
    assert space.line_names == ["a", "b"]
    assert space.stat_value(0) == "flow"
    only = decoder(lfield(1, plane) + lfield(1, lfield(2, b"other")), planes=lambda n: "/" in n)
    assert [p.name for p in only.planes] == ["/host:CPU"] and only.line_names == ["a", "b"]


def _at(data: bytes, marker: bytes) -> int:
    return data.index(marker)


EVENT_OK = vfield(1, 1)
MALFORMED: list[tuple[str, bytes, str, Callable[[bytes], int]]] = [
    (
        "truncated varint",
        space_of(EVENT_OK + tag(3, 0) + b"\xff\xff"),
        "truncated varint",
        lambda d: len(d) - 2,
    ),
    (
        "varint of 11 bytes",
        space_of(EVENT_OK + tag(3, 0) + b"\xff" * 10 + b"\x01"),
        "longer than 10 bytes",
        lambda d: _at(d, b"\xff" * 10),
    ),
    (
        "stat length past its event",
        space_of(EVENT_OK + tag(4, 2) + varint(50) + b"\x08\x01"),
        "XEvent.stats: length 50 runs past the end",
        lambda d: _at(d, b"\x22\x32") + 1,
    ),
    (
        "group wire type",
        space_of(EVENT_OK + tag(9, 3) + tag(9, 4)),
        "groups are not supported",
        lambda d: _at(d, tag(9, 3)),
    ),
    (
        "invalid wire type 7",
        space_of(EVENT_OK + tag(9, 7)),
        "invalid wire type 7",
        lambda d: _at(d, tag(9, 7)),
    ),
    (
        "known field, wrong wire type",
        space_of(EVENT_OK + lfield(3, b"xx")),
        "XEvent.duration_ps has wire type 2 (length-delimited), expected 0 (varint)",
        lambda d: _at(d, lfield(3, b"xx")),
    ),
    (
        "field number 0",
        space_of(EVENT_OK + tag(0, 0) + b"\x00"),
        "field number 0",
        lambda d: len(d) - 2,
    ),
    (
        "str_value not UTF-8",
        space_of(EVENT_OK + lfield(4, lfield(5, b"ok\xed\xa0\x80"))),
        "XStat.str_value is not valid UTF-8",
        lambda d: _at(d, b"ok\xed"),
    ),
    (
        "line name not UTF-8",
        lfield(1, lfield(3, lfield(2, b"ab\xc0\xafcd"))),
        "XLine.name is not valid UTF-8",
        lambda d: _at(d, b"\xc0\xaf"),
    ),
    (
        "plane length past the end",
        lfield(1, b"\x08\x01")[:-1],
        "XSpace.planes: length 2 runs past the end",
        lambda d: 1,
    ),
]


@needs_native
@pytest.mark.parametrize(
    ("data", "message", "offset"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_input_says_what_and_where(data: bytes, message: str, offset: Callable):
    with pytest.raises(XPlaneDecodeError) as caught:
        native(data)
    assert message in str(caught.value)
    assert caught.value.offset == offset(data)
    assert str(caught.value).endswith(f"at byte {offset(data)}")


def test_reference_decoder_raises_the_same_error_type():
    with pytest.raises(XPlaneDecodeError, match="not a valid XSpace"):
        reference(space_of(EVENT_OK + tag(3, 0) + b"\xff\xff"))


def test_proto_module_does_not_import_tensorflow():
    code = (
        "import sys, tftrace.analysis.xplane.decode, tftrace.analysis.xplane.reference;"
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------------------------
# (a) Real traces: native == reference == TF's own parser

WORKLOAD = r"""
import glob, json, os, sys
import tensorflow as tf

logdir = sys.argv[1]
a = tf.random.normal((64, 64))

@tf.function
def step(x):
    return tf.add_n([tf.matmul(x, a) for _ in range(4)])

dataset = (
    tf.data.Dataset.range(128)
    .map(lambda i: tf.cast(i, tf.float32) * 2.0, num_parallel_calls=2)
    .batch(8)
    .prefetch(1)
)
step(a).numpy()
tf.profiler.experimental.start(logdir)
for i, batch in enumerate(dataset):
    with tf.profiler.experimental.Trace("train", step_num=i, _r=1, tag="é"):
        step(a)
        tf.reduce_sum(batch).numpy()
tf.profiler.experimental.stop()

# What TF's own classes read from the trace, for the test to compare with.
from google.protobuf.json_format import MessageToDict
from tensorflow.tsl.profiler.protobuf import xplane_pb2
from tftrace.analysis.xplane import schema as xplane_proto

(path,) = glob.glob(os.path.join(logdir, "plugins/profile/*/*.xplane.pb"))
space = xplane_pb2.XSpace.FromString(open(path, "rb").read())
ours = xplane_proto.XSpace.FromString(space.SerializeToString())
back = xplane_pb2.XSpace.FromString(ours.SerializeToString())

def value(stat, names):
    field = stat.WhichOneof("value")
    v = getattr(stat, field) if field else None
    if field == "ref_value":
        return names[v].name
    return v.hex() if field == "bytes_value" else v

planes, counter = [], 0
for plane in space.planes:
    names = plane.stat_metadata
    samples = []
    for li, line in enumerate(plane.lines):
        for ei, event in enumerate(line.events):
            counter += 1
            if ei not in (0, len(line.events) - 1) and counter % 23:
                continue
            samples.append({
                "line": li, "event": ei,
                "name": plane.event_metadata[event.metadata_id].name,
                "display_name": plane.event_metadata[event.metadata_id].display_name,
                "offset_ps": event.offset_ps, "duration_ps": event.duration_ps,
                "num_occurrences": event.num_occurrences,
                "stats": [[names[s.metadata_id].name, value(s, names)] for s in event.stats],
            })
    planes.append({
        "name": plane.name,
        "lines": [[line.name, line.timestamp_ns, len(line.events)] for line in plane.lines],
        "samples": samples,
    })
summary = {
    "path": path,
    "ours_equal_tf": MessageToDict(ours) == MessageToDict(space),
    "round_trip_equal": back == space,
    "hostnames": list(space.hostnames),
    "planes": planes,
}
with open(os.path.join(logdir, "tf_summary.json"), "w") as f:
    json.dump(summary, f)
"""


@pytest.fixture(scope="module")
def real_trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A small real trace (host plane with Python, executor and tf.data threads) and what TF's
    own parser reads from it."""
    logdir = tmp_path_factory.mktemp("xplane")
    proc = subprocess.run(
        [sys.executable, "-c", WORKLOAD, str(logdir)],
        capture_output=True,
        text=True,
        env=quiet_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary: dict[str, Any] = json.loads((logdir / "tf_summary.json").read_text())
    summary["data"] = Path(summary["path"]).read_bytes()
    return summary


@pytest.mark.slow
def test_our_proto_classes_read_what_tf_wrote(real_trace: dict[str, Any]):
    assert real_trace["ours_equal_tf"]
    assert real_trace["round_trip_equal"]


# Flow ids, the workload's TraceMe arguments (ints, a str), ids TF sets, and a name no plane has.
REAL_PROMOTED = ["_p", "_c", "_pt", "_ct", "step_num", "_r", "tag", "group_id", "id", "nowhere"]


@pytest.mark.slow
@needs_native
def test_native_and_reference_agree_on_a_real_trace(real_trace: dict[str, Any]):
    data = real_trace["data"]
    fast, slow = native(data, event_stats=REAL_PROMOTED), reference(data, event_stats=REAL_PROMOTED)
    assert len(fast.events["line"]) > 1000
    assert differences(fast, slow) == []
    assert as_lists(fast) == scattered_event_stats(fast, REAL_PROMOTED)
    present = {name: int(p.sum()) for name, (_, p) in fast.event_stat_columns.items()}
    assert present["_p"] > 0 and present["_c"] > 0 and present["step_num"] > 0, present
    assert present["nowhere"] == 0, present
    # TF interns str values of TraceMe arguments: "tag" is a ref, its id names the string.
    values, flags = fast.event_stat_columns["tag"]
    assert flags.any()
    for row in np.flatnonzero(flags):
        plane = fast.planes[int(fast.lines["plane"][fast.events["line"][row]])]
        assert plane.stat_metadata[int(values[row])] == "é"
    host = [p.name for p in fast.planes].index("/host:CPU")
    only_host = native(data, planes=lambda name: name == "/host:CPU", event_stats=["_p", "_c"])
    rows = np.flatnonzero(fast.lines["plane"] == host)
    assert only_host.line_names == [fast.line_names[r] for r in rows]
    slow_host = reference(data, planes=lambda name: name == "/host:CPU", event_stats=["_p", "_c"])
    assert differences(only_host, slow_host) == []
    lean = native(data, event_stats=REAL_PROMOTED, stats=False)
    assert lean_differences(fast, lean) == []
    assert differences(lean, reference(data, event_stats=REAL_PROMOTED, stats=False)) == []


@pytest.mark.slow
@pytest.mark.parametrize("decoder", DECODERS)
def test_decode_matches_tensorflows_parser(
    real_trace: dict[str, Any], decoder: Callable[..., DecodedSpace]
):
    space = decoder(real_trace["data"])
    assert space.hostnames == real_trace["hostnames"]
    assert [p.name for p in space.planes] == [p["name"] for p in real_trace["planes"]]
    for plane, expected in zip(space.planes, real_trace["planes"], strict=True):
        rows = np.flatnonzero(space.lines["plane"] == plane.index)
        got = [
            [
                space.line_names[r],
                int(space.lines["timestamp_ns"][r]),
                int(space.lines["n_events"][r]),
            ]
            for r in rows
        ]
        assert got == expected["lines"]
        for sample in expected["samples"]:
            line = rows[sample["line"]]
            row = int(space.lines["first_event"][line]) + sample["event"]
            assert space.events["line"][row] == line
            name, display = plane.event_metadata[int(space.events["metadata_id"][row])]
            first, n = int(space.events["first_stat"][row]), int(space.events["n_stats"][row])
            stats = [
                [plane.stat_metadata[int(space.stats["metadata_id"][s])], space.stat_value(s)]
                for s in range(first, first + n)
            ]
            stats = [[k, v.hex() if isinstance(v, bytes) else v] for k, v in stats]
            assert {
                "name": name,
                "display_name": display,
                "offset_ps": int(space.events["offset_ps"][row]),
                "duration_ps": int(space.events["duration_ps"][row]),
                "num_occurrences": int(space.events["num_occurrences"][row]),
                "stats": stats,
            } == {k: v for k, v in sample.items() if k not in ("line", "event")}
    n_samples = sum(len(p["samples"]) for p in real_trace["planes"])
    assert n_samples > 50


# --------------------------------------------------------------------------------------------
# (b) Hostile input: truncated and bit-flipped copies of a real trace


def mutations(data: bytes, cuts: int, flips: int, seed: int) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(seed)
    points = {round(i * len(data) / cuts) for i in range(cuts)} | {1, len(data) - 1}
    for point in sorted(points):
        yield f"cut at {point}", data[:point]
    for _ in range(flips):
        copy = bytearray(data)
        positions = [rng.randrange(len(data)) for _ in range(rng.choice((1, 1, 2, 8)))]
        for position in positions:
            copy[position] ^= 1 << rng.randrange(8)
        yield f"bits flipped at {positions}", bytes(copy)


def fuzz_main(path: str, cuts: int, flips: int, seed: int) -> None:
    """Runs in a subprocess (a crash kills it, not pytest); prints one JSON line."""
    data = Path(path).read_bytes()
    report: dict[str, Any] = {"cases": 0, "native_errors": 0, "compared": 0}
    report.update(native_only=0, reference_only=0, mismatches=[])
    for label, mutated in mutations(data, cuts, flips, seed):
        report["cases"] += 1
        try:
            fast = decode(mutated, event_stats=REAL_PROMOTED)
        except XPlaneDecodeError:
            fast = None
            report["native_errors"] += 1
        try:  # without the stats table: the same verdict and the same columns
            lean = decode(mutated, event_stats=REAL_PROMOTED, stats=False)
            found = ["decoded only without stats"] if fast is None else lean_differences(fast, lean)
        except XPlaneDecodeError:
            found = [] if fast is None else ["refused only without stats"]
        if found:
            report["mismatches"].append(f"{label}, stats=False: {found}")
        try:
            slow = decode_reference(mutated, event_stats=REAL_PROMOTED)
        except XPlaneDecodeError:
            slow = None
        if fast is not None and slow is not None:
            report["compared"] += 1
            found = differences(fast, slow)
            if found:
                report["mismatches"].append(f"{label}: {found}")
        elif fast is not None:
            report["native_only"] += 1
        elif slow is not None:
            report["reference_only"] += 1
    print(json.dumps(report))


@pytest.mark.slow
@needs_native
def test_hostile_input_is_refused_without_crashing(real_trace: dict[str, Any]):
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from golden.test_xplane_decode import fuzz_main;"
        "fuzz_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))"
    )
    args = [str(TESTS), real_trace["path"], "150", "400", "20261122"]
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"fuzz run died ({proc.returncode}): {proc.stderr[-3000:]}"
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["mismatches"] == []
    # Both outcomes were exercised: refusals and successful decodes that were compared.
    assert report["native_errors"] > 100, report
    assert report["compared"] > 100, report
