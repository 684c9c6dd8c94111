"""Decode a TF profiler trace (``*.xplane.pb``, an ``XSpace`` protobuf) into numpy columns.

A trace of a few seconds holds millions of events. Parsing it into protobuf objects is fast
(upb, in C), but reading those objects back from Python, one attribute at a time, is several
times slower than the parse. So the lines, events and stats of every plane are decoded in one
pass over the wire format by a small C extension (``_wire``) into column arrays; only the small
per-plane maps (event and stat metadata) and the XSpace's own fields go through the protobuf
classes of :mod:`.schema`. Without the extension, :mod:`.reference` builds the same result by
looping over protobuf messages (slow, but needs no compiler). The tables are described in
:mod:`.columns`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from tftrace.analysis.xplane import schema as xplane_proto
from tftrace.analysis.xplane.columns import (
    EVENT_COLUMNS,
    LINE_COLUMNS,
    STAT_COLUMNS,
    DecodedPlane,
    DecodedSpace,
    PlaneFilter,
    XPlaneDecodeError,
    decoded_plane,
    promoted_ids,
    promoted_names,
)

# The C extension's interface version this module speaks (WIRE_ABI in _wire.c).
_WIRE_ABI = 2


# ------------------------------------------------------------------------------------------
# Native path


def _load_wire() -> ModuleType | None:
    try:
        from tftrace.analysis.xplane import _wire  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_wire, "ABI", None) != _WIRE_ABI:
        return None  # a stale build from an older source: do not trust its layout
    module: ModuleType = _wire
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
    from tftrace.analysis.xplane.reference import decode_reference

    return decode_reference(data, planes=planes, event_stats=names, stats=stats)


__all__ = ["decode", "native_available"]
