"""Trace events as columns before the one sort: a ``Batch`` of keys (time, -length, rank,
sequence) and JSON texts, built from ``Slices`` with each thread's pid and tid looked up for a
whole column at once (``trace.py`` assembles the trace from these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from tftrace.analysis.export import trace_text as text
from tftrace.analysis.export.trace_format import SLICE_RANK, Slices, Track


@dataclass(frozen=True)
class Batch:
    """Events as columns before the one sort: keys (time, -length, rank, sequence) and the
    JSON text of each event."""

    at_ns: np.ndarray
    neg_length: np.ndarray
    rank: int
    seq: np.ndarray
    text: pa.LargeStringArray


class Tracks:
    """pid and tid of each thread key, looked up for whole columns at once."""

    def __init__(self, tracks: dict[int, Track]) -> None:
        self.keys = np.array(sorted(tracks), dtype=np.int64)
        self.pid = np.array([tracks[int(k)].pid for k in self.keys], dtype=np.int64)
        self.tid = np.array([tracks[int(k)].tid for k in self.keys], dtype=np.int64)

    def of(self, thread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.searchsorted(self.keys, np.asarray(thread, dtype=np.int64))
        return self.pid[at], self.tid[at]


def _values(value: Any, n: int) -> text.Text:
    """Args values as JSON text: integers stay numbers, anything else is a string."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return text.integers(value, n)
    if isinstance(value, str):
        return text.strings(value, n)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and pd.api.types.is_integer_dtype(dtype):
        return text.integers(value, n)
    return text.strings(value, n)


def slice_batch(slices: Slices, tracks: Tracks, seq: int) -> Batch:
    n = len(slices)
    pid, tid = tracks.of(slices.thread)
    start, end = np.asarray(slices.start_ns, np.int64), np.asarray(slices.end_ns, np.int64)
    length = end - start
    fields = [(k, _values(v, n)) for k, v in slices.args.items()]
    body = text.event(
        {
            "ph": text.strings("X", n),
            "cat": text.strings(slices.cat, n),
            "name": text.strings(slices.names, n),
            "pid": text.integers(pid, n),
            "tid": text.integers(tid, n),
            "ts": text.microseconds_text(start),
            "dur": text.microseconds_text(length),
            "args": text.obj(fields, n),
        },
        n,
    )
    return Batch(start, -length, SLICE_RANK, seq + np.arange(n), body)
