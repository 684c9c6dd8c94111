"""The export's JSON text, built column by column, parses to the values json.dumps would
have written: times (the ulp-moved ones too), escaped names, objects with missing fields."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tftrace.analysis.export import trace_text as text
from tftrace.analysis.export.trace_format import exact_microseconds


def test_times_parse_to_the_exact_microseconds():
    rng = np.random.default_rng(0)
    ns = np.r_[rng.integers(-(10**12), 10**13, 200_000), 2707831993, 0, -1, 999, 1000]
    us = exact_microseconds(ns)
    moved = us != ns / 1000.0
    assert moved.sum() > 10  # the values that had to move an ulp are among them
    parsed = [json.loads(t) for t in text.microseconds_text(ns).to_pylist()]
    assert parsed == us.tolist()
    # And Perfetto's reading of each gives back the ns exactly.
    assert (np.trunc(np.array(parsed) * 1000.0) == ns).all()


def test_strings_integers_and_objects():
    names = pd.Series(['a"b', None, "<script>", "é\n"], dtype="category")
    flows = pd.Series([1, None, 3, None], dtype="Int64")
    n = len(names)
    args = [("flow", text.integers(flows, n)), ("kind", text.strings("x", n))]
    rows = text.event({"name": text.strings(names, n), "args": text.obj(args, n)}, n)
    parsed = [json.loads(r) for r in rows.to_pylist() if r is not None]
    assert parsed == [
        {"name": 'a"b', "args": {"flow": 1, "kind": "x"}},
        {"name": "<script>", "args": {"flow": 3, "kind": "x"}},
        {"name": "é\n", "args": {"kind": "x"}},
    ]  # a missing name makes no event: the caller fills names (trace._text)
    assert text.comma_joined(rows.drop_null()) == b",".join(
        r.encode() for r in rows.drop_null().to_pylist()
    )
