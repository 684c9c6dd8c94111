"""Trace events as columns before the one sort: a ``Batch`` of keys (time, -length, rank,
sequence) and the events' fields, built from ``Slices`` with each thread's pid and tid looked
up for a whole column at once (``trace.py`` assembles the trace from these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.export.trace_fields import EventColumns, Int, Micros, Num, Obj, Str, Value
from tftrace.analysis.export.trace_format import SLICE_RANK, Slices, Track


@dataclass(frozen=True)
class Batch:
    """Events as columns before the one sort: keys (time, -length, rank, sequence) and the
    events' fields."""

    at_ns: np.ndarray
    neg_length: np.ndarray
    rank: int
    seq: np.ndarray
    events: EventColumns


class Tracks:
    """pid and tid of each thread key, looked up for whole columns at once."""

    def __init__(self, tracks: dict[int, Track]) -> None:
        self.keys = np.array(sorted(tracks), dtype=np.int64)
        self.pid = np.array([tracks[int(k)].pid for k in self.keys], dtype=np.int64)
        self.tid = np.array([tracks[int(k)].tid for k in self.keys], dtype=np.int64)

    def of(self, thread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.searchsorted(self.keys, np.asarray(thread, dtype=np.int64))
        return self.pid[at], self.tid[at]


def _value(value: Any) -> Value:
    """Args values: integers stay numbers, a typed value (``Num``: floats) stays as it is,
    anything else is a string."""
    if isinstance(value, (Str, Int, Num, Micros, Obj)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Int(value)
    if isinstance(value, str):
        return Str(value)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and pd.api.types.is_integer_dtype(dtype):
        return Int(value)
    return Str(value)


def slice_batch(slices: Slices, tracks: Tracks, seq: int) -> Batch:
    n = len(slices)
    pid, tid = tracks.of(slices.thread)
    start, end = np.asarray(slices.start_ns, np.int64), np.asarray(slices.end_ns, np.int64)
    length = end - start
    fields: list[tuple[str, Value]] = [
        ("ph", Str("X")),
        ("cat", Str(slices.cat)),
        ("name", Str(slices.names)),
        ("pid", Int(pid)),
        ("tid", Int(tid)),
        ("ts", Micros(start)),
        ("dur", Micros(length)),
        ("args", Obj([(k, _value(v)) for k, v in slices.args.items()])),
    ]
    return Batch(start, -length, SLICE_RANK, seq + np.arange(n), EventColumns(n, fields))
