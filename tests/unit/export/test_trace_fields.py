"""The export's two JSON writers agree byte for byte: the C writer (``_events``) and pyarrow's
string kernels, on hand-built batches with every kind of field and null, on the sort order,
and on whole real traces. The C writer refuses malformed programs with an exception."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import SAMPLE_RUNS
from tftrace.analysis.export import trace, trace_fields
from tftrace.analysis.export.trace_fields import (
    EventColumns,
    Int,
    Micros,
    Obj,
    Str,
    event_order,
    format_arrow,
    format_native,
    native_available,
)
from tftrace.analysis.metrics.trace_figures import trace_figures
from tftrace.analysis.model.run import load

needs_native = pytest.mark.skipif(not native_available(), reason="C writer not built")


def _batches() -> list[EventColumns]:
    rng = np.random.default_rng(1)
    n = 5000
    names = pd.Series(
        rng.choice(['a"b', "<script>", "é\n", "tab\t", "\\", "plain"], n), dtype="category"
    )
    flows = pd.Series(rng.integers(-(2**62), 2**62, n), dtype="Int64")
    flows[rng.random(n) < 0.3] = pd.NA
    kinds = pd.Series(rng.choice(["x", "y"], n), dtype="category").cat.set_categories(["x", "y"])
    kinds[rng.random(n) < 0.2] = None
    ns = np.r_[rng.integers(-(10**12), 10**13, n - 5), 2707831993, 0, -1, 999, 1000]
    slices = EventColumns(
        n,
        [
            ("ph", Str("X")),
            ("name", Str(names)),
            ("pid", Int(7)),
            ("tid", Int(rng.integers(0, 2**32, n))),
            ("ts", Micros(ns)),
            ("dur", Micros(np.abs(ns) // 7)),
            ("args", Obj([("flow", Int(flows)), ("kind", Str(kinds)), ("c", Str("const"))])),
        ],
    )
    counters = EventColumns(
        3,
        [
            ("ph", Str("C")),
            ("ts", Micros(np.array([5, 6, 7]))),
            ("args", Obj([("busy", Int(np.array([0, 1, 2]))), ("empty", Obj([]))])),
        ],
    )
    return [slices, counters]


@needs_native
def test_the_writers_agree_on_every_field_and_null():
    batches = _batches()
    total = sum(b.rows for b in batches)
    order = np.random.default_rng(2).permutation(total)
    native = format_native(batches, order, b"[", b"]")
    assert bytes(native) == format_arrow(batches, order, b"[", b"]")
    events = json.loads(native)
    assert len(events) == total
    # a null is left out, key and all; a constant and an empty object are kept
    assert any("flow" not in e.get("args", {}) for e in events)
    assert all(e["args"]["c"] == "const" for e in events if e["ph"] == "X")
    assert {json.dumps(e["args"]["empty"]) for e in events if e["ph"] == "C"} == {"{}"}


@needs_native
def test_nothing_to_write_is_the_prefix_and_suffix():
    assert bytes(format_native([], np.zeros(0, np.int64), b"{", b"}")) == b"{}"
    empty = EventColumns(0, [("ts", Micros(np.zeros(0, np.int64)))])
    assert bytes(format_native([empty], np.zeros(0, np.int64), b"[", b"]")) == b"[]"


@needs_native
def test_event_order_is_the_four_key_sort():
    rng = np.random.default_rng(3)
    n = 20_000
    at = rng.integers(0, 300, n)  # many ties, some runs long
    at[:2000] = 5
    neg = -rng.integers(0, 4, n)
    rank = rng.integers(0, 3, n)
    seq = rng.permutation(n)
    expected = np.lexsort((seq, rank, neg, at))
    assert (event_order(at, neg, rank, seq) == expected).all()


@needs_native
@pytest.mark.parametrize("run_dir", SAMPLE_RUNS, ids=[p.name for p in SAMPLE_RUNS])
def test_the_writers_agree_on_real_traces(run_dir, monkeypatch: pytest.MonkeyPatch):
    figures = trace_figures(load(run_dir))
    native, count = trace.trace_json(figures)
    monkeypatch.setattr(trace_fields, "native_available", lambda: False)
    monkeypatch.setattr(trace_fields, "_events", None)  # the order falls back to lexsort too
    arrow, same_count = trace.trace_json(figures)
    assert count == same_count > 100
    assert bytes(native) == arrow


@needs_native
@pytest.mark.parametrize(
    ("ops", "error"),
    [
        ([(9, None)], "op 9"),
        ([(trace_fields.OP_OPEN, None)], "left open"),
        ([(trace_fields.OP_CLOSE, None)], "close without"),
        ([(trace_fields.OP_LIT, b'"k":', b"1")], "outside any object"),
        ([(trace_fields.OP_INT, None, np.zeros(1, np.int64), None)], "expected 2 rows"),
        ([(trace_fields.OP_STR, None, np.array([0, 3], np.int32), [b'"a"'])], "past its table"),
        ([(trace_fields.OP_STR, None, np.zeros(2, np.int32), ["a"])], "must be bytes"),
    ],
)
def test_malformed_programs_are_refused(ops, error):
    from tftrace.analysis.export import _events  # type: ignore[attr-defined]

    with pytest.raises((ValueError, TypeError), match=error):
        _events.format_events([(2, ops)], np.arange(2, dtype=np.int64), b"", b"")
    with pytest.raises(ValueError, match="not a row"):
        program = (2, [(trace_fields.OP_LIT, None, b"1")])
        _events.format_events([program], np.array([0, 2], np.int64), b"", b"")
