"""JSON text of millions of trace events, built column by column (pyarrow's string kernels).

Why not ``json.dumps`` of one dict per event: on a long trace (millions of events) the dicts
alone take gigabytes and the serialisation tens of seconds. Here each field is one column of
text (a name escaped once per distinct name, numbers formatted in bulk) and an event is the
element-wise join of its fields' columns; the events are ordered with one ``lexsort`` and
written as one buffer. The text parses to exactly the values ``json.dumps`` would write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tftrace.analysis.export.trace_format import exact_microseconds

# A column of JSON text, or one text for every row.
Text: TypeAlias = "pa.LargeStringArray | pa.Scalar"


def strings(values: Any, length: int) -> Text:
    """JSON string literals (escaped, quoted) of ``values`` (one per row, a categorical, or
    one string for every row); each distinct value is escaped once. Missing values: null."""
    if isinstance(values, str):
        return pa.scalar(json.dumps(values), pa.large_string())
    codes, escaped = string_codes(values)
    table = pa.array([*escaped, None], pa.large_string())
    out = table.take(pa.array(np.where(codes < 0, len(escaped), codes)))
    assert len(out) == length
    return out


def string_codes(values: Any) -> tuple[np.ndarray, list[str]]:
    """(code per row, -1 where missing; the JSON literal of each distinct value): a column of
    strings as a table of literals, each escaped once."""
    column = pd.Series(values, copy=False)
    if not isinstance(column.dtype, pd.CategoricalDtype):
        column = column.astype("category")
    return column.cat.codes.to_numpy(), [json.dumps(str(c)) for c in column.cat.categories]


def number_codes(values: Any) -> tuple[np.ndarray, list[str]]:
    """(code per row, -1 where NaN; the JSON text of each distinct float, its ``repr``)."""
    floats = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(floats)
    distinct, codes = np.unique(floats[finite], return_inverse=True)
    out = np.full(len(floats), -1, dtype=np.int64)
    out[finite] = codes
    return out, [repr(float(v)) for v in distinct]


def numbers(values: Any, length: int) -> Text:
    """Floats as JSON numbers (``repr``); NaN is null, so an object field omits it."""
    codes, literals = number_codes(values)
    table = pa.array([*literals, None], pa.large_string())
    out = table.take(pa.array(np.where(codes < 0, len(literals), codes)))
    assert len(out) == length
    return out


def integers(values: Any, length: int) -> Text:
    """Integers as JSON text; a missing value (NA) is null, so an object field omits it."""
    if isinstance(values, (int, np.integer)):
        return pa.scalar(str(int(values)), pa.large_string())
    array = pa.array(pd.Series(values, copy=False).astype("Int64"), pa.int64())
    assert len(array) == length
    return pc.cast(array, pa.large_string())


def microseconds_text(ns: np.ndarray) -> pa.LargeStringArray:
    """The JSON numbers of ``exact_microseconds(ns)``: the exact decimal ns / 1000 (it parses
    to the same float as ``ns / 1000``), and the float's repr where the value had to move an
    ulp."""
    ns = np.asarray(ns, dtype=np.int64)
    exact_us = exact_microseconds(ns)
    magnitude = np.abs(ns)
    sign = pc.if_else(pa.array(ns < 0), _large("-"), _large(""))
    whole = pc.cast(pa.array(magnitude // 1000), pa.large_string())
    part = pc.utf8_lpad(pc.cast(pa.array(magnitude % 1000), pa.large_string()), 3, "0")
    text = join(sign, whole, ".", part)
    moved = exact_us != ns / 1000.0
    if moved.any():
        reprs = pa.array([repr(float(u)) for u in exact_us[moved]], pa.large_string())
        text = pc.replace_with_mask(text, pa.array(moved), reprs)
    return pc.cast(text, pa.large_string())


def join(*parts: Text | str) -> pa.LargeStringArray:
    """Element-wise concatenation; a null part makes the row null."""
    large = [_large(p) for p in parts]
    return pc.binary_join_element_wise(*large, _large(""))


def _large(part: Text | str) -> Text:
    if isinstance(part, str):
        return pa.scalar(part, pa.large_string())
    if part.type != pa.large_string():
        return part.cast(pa.large_string())
    return part


def obj(fields: Sequence[tuple[str, Text]], length: int) -> Text:
    """``{"k": v, ...}`` per row from (key, JSON text of the value) pairs; a field whose value
    is null on a row is left out of that row's object."""
    if not fields:
        return pa.scalar("{}", pa.large_string())
    pieces = [pc.fill_null(join(f",{json.dumps(k)}:", v), _large("")) for k, v in fields]
    if all(isinstance(p, pa.Scalar) for p in pieces):  # one object for every row
        inner = "".join(p.as_py() for p in pieces)
        return pa.scalar("{" + inner[1:] + "}", pa.large_string())
    body = join(*pieces) if len(pieces) > 1 else _column(pieces[0], length)
    return join("{", pc.utf8_slice_codeunits(body, 1), "}")


def event(fields: Mapping[str, Text], length: int) -> pa.LargeStringArray:
    """One JSON object per row, every field present."""
    parts: list[Text] = []
    for i, (key, value) in enumerate(fields.items()):
        parts += [("{" if i == 0 else ",") + json.dumps(key) + ":", value]
    return _column(join(*parts, "}"), length)


def _column(text: Text, length: int) -> pa.LargeStringArray:
    if isinstance(text, pa.Scalar):
        return pa.array([text.as_py()] * length, pa.large_string())
    return pc.cast(text, pa.large_string())


def comma_joined(texts: pa.LargeStringArray) -> bytes:
    """The texts, in order, separated by commas, as UTF-8 bytes."""
    if len(texts) == 0:
        return b""
    array = pc.cast(join(texts, ","), pa.large_string())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)
    first, last = offsets[array.offset], offsets[array.offset + len(array)]
    data = array.buffers()[2]
    return data.to_pybytes()[first : last - 1]  # no comma after the last one
