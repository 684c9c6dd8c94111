"""What each exported event holds, as typed columns, and the two ways to write it as JSON.

A batch of events is a list of ``(key, value)`` fields, each value a whole column (or one value
for every row): ``Str``, ``Int``, ``Num`` (a float), ``Micros`` (ns written as µs) or a nested
``Obj``. Two writers turn batches into the text of the trace, byte for byte the same:

- ``format_native``: the C extension ``_events`` writes every event once, in sorted order,
  straight into one buffer (330 MB of JSON from a 2-million-event trace in well under a second).
- ``format_arrow``: pyarrow's string kernels, column by column (``trace_text.py``); used
  where the extension is not built (no compiler at install), and the reference it is tested
  against.

Null values (a missing string, an NA integer, a NaN float) are left out of their object, key
and all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa

from tftrace.analysis.export import trace_text as text
from tftrace.analysis.export.trace_format import exact_microseconds

# The C extension's interface version this module speaks (EVENTS_ABI in _events.c).
_EVENTS_ABI = 1
OP_LIT, OP_STR, OP_INT, OP_US, OP_OPEN, OP_CLOSE = range(6)


@dataclass(frozen=True)
class Str:
    """One string for every row, or a column of them (categorical, array, list; None: null)."""

    values: Any


@dataclass(frozen=True)
class Int:
    """One integer for every row, or an integer column (NA: null)."""

    values: Any


@dataclass(frozen=True)
class Num:
    """A column of floats, written as the shortest text that reads back as each (Python's
    ``repr``); NaN: null. The few args that are fractions (a request's latency, its shares)."""

    values: Any


@dataclass(frozen=True)
class Micros:
    """int64 ns, written as the µs float that reads back as exactly that ns."""

    ns: np.ndarray


@dataclass(frozen=True)
class Obj:
    """A nested object."""

    fields: Sequence[tuple[str, Value]]


Value: TypeAlias = "Str | Int | Num | Micros | Obj"
Fields: TypeAlias = Sequence[tuple[str, Value]]


@dataclass(frozen=True)
class EventColumns:
    """``rows`` events, one object each, from ``fields``."""

    rows: int
    fields: Fields


# ------------------------------------------------------------------------------------------
# Native writer


def _load_events() -> ModuleType | None:
    try:
        from tftrace.analysis.export import _events  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_events, "ABI", None) != _EVENTS_ABI:
        return None  # a stale build from an older source
    module: ModuleType = _events
    return module


_events = _load_events()


def native_available() -> bool:
    """Whether the C writer is built (``pip install -e .`` builds it when a compiler exists)."""
    return _events is not None


def _key(key: str | None) -> bytes | None:
    return None if key is None else json.dumps(key).encode() + b":"


def _codes_and_table(values: Any) -> tuple[np.ndarray, list[bytes]]:
    codes, escaped = text.string_codes(values)
    return np.ascontiguousarray(codes, dtype=np.int32), [e.encode() for e in escaped]


def _ops(key: str | None, value: Value, rows: int) -> list[tuple[Any, ...]]:
    k = _key(key)
    if isinstance(value, Obj):
        inner = [op for name, v in value.fields for op in _ops(name, v, rows)]
        return [(OP_OPEN, k), *inner, (OP_CLOSE, None)]
    if isinstance(value, Str):
        if isinstance(value.values, str):
            return [(OP_LIT, k, json.dumps(value.values).encode())]
        return [(OP_STR, k, *_codes_and_table(value.values))]
    if isinstance(value, Num):
        # the distinct numbers' texts as a table, each row its code: the string op writes a
        # table entry as it is, and a number's text needs no quotes
        codes, literals = text.number_codes(value.values)
        return [(OP_STR, k, np.ascontiguousarray(codes, np.int32), [t.encode() for t in literals])]
    if isinstance(value, Int):
        if isinstance(value.values, (int, np.integer)):
            return [(OP_LIT, k, str(int(value.values)).encode())]
        column = pd.Series(value.values, copy=False).astype("Int64")
        valid = column.notna().to_numpy()
        numbers = np.ascontiguousarray(column.fillna(0).to_numpy(dtype=np.int64))
        mask = None if valid.all() else np.ascontiguousarray(valid, dtype=np.uint8)
        return [(OP_INT, k, numbers, mask)]
    ns = np.ascontiguousarray(value.ns, dtype=np.int64)
    exact_us = exact_microseconds(ns)
    moved = np.flatnonzero(exact_us != ns / 1000.0)
    if not len(moved):
        return [(OP_US, k, ns, None, [])]
    codes = np.full(len(ns), -1, np.int32)
    codes[moved] = np.arange(len(moved), dtype=np.int32)
    return [(OP_US, k, ns, codes, [repr(float(u)).encode() for u in exact_us[moved]])]


def program(batch: EventColumns) -> tuple[int, list[tuple[Any, ...]]]:
    """The batch as the C writer's ops (see ``_events.c``)."""
    return batch.rows, _ops(None, Obj(batch.fields), batch.rows)


def event_order(
    at_ns: np.ndarray, neg_length: np.ndarray, rank: np.ndarray, seq: np.ndarray
) -> np.ndarray:
    """The permutation that sorts events by (time, -length, rank, sequence)."""
    if _events is None:
        order: np.ndarray = np.lexsort((seq, rank, neg_length, at_ns))
        return order
    order = np.argsort(at_ns, kind="stable").astype(np.int64)  # time-sorted runs: cheap
    tie = (np.asarray(rank, np.int64) << 48) | np.asarray(seq, np.int64)
    _events.sort_ties(order, *(np.ascontiguousarray(a, np.int64) for a in (at_ns, neg_length, tie)))
    return order


def format_native(
    batches: Sequence[EventColumns], order: np.ndarray, prefix: bytes, suffix: bytes
) -> bytearray:
    """``prefix``, the rows of the batches laid end to end taken in ``order`` and joined by
    commas, then ``suffix``: one buffer."""
    if _events is None:
        raise RuntimeError("the C writer (_events) is not built")
    programs = [program(b) for b in batches]
    result: bytearray = _events.format_events(
        programs, np.ascontiguousarray(order, dtype=np.int64), prefix, suffix
    )
    return result


# ------------------------------------------------------------------------------------------
# pyarrow writer


def _text(value: Value, rows: int) -> text.Text:
    if isinstance(value, Obj):
        return text.obj([(k, _text(v, rows)) for k, v in value.fields], rows)
    if isinstance(value, Str):
        return text.strings(value.values, rows)
    if isinstance(value, Int):
        return text.integers(value.values, rows)
    if isinstance(value, Num):
        return text.numbers(value.values, rows)
    return text.microseconds_text(value.ns)


def event_texts(batch: EventColumns) -> pa.LargeStringArray:
    """One JSON object per row (pyarrow); the batch's fields must not be null at the top."""
    return text.event({k: _text(v, batch.rows) for k, v in batch.fields}, batch.rows)


def format_arrow(
    batches: Sequence[EventColumns], order: np.ndarray, prefix: bytes, suffix: bytes
) -> bytes:
    """What ``format_native`` writes, with pyarrow's kernels."""
    if not batches:
        return prefix + suffix
    events = pa.concat_arrays([event_texts(b) for b in batches]).take(pa.array(order))
    return b"".join([prefix, text.comma_joined(events), suffix])


def format_events(
    batches: Sequence[EventColumns], order: np.ndarray, prefix: bytes, suffix: bytes
) -> bytes | bytearray:
    """The C writer where it is built, else pyarrow's."""
    write = format_native if native_available() else format_arrow
    return write(batches, order, prefix, suffix)
