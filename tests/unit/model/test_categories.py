"""Tests on a categorical column done once per category: the same answers as per row, and
missing values never match."""

from __future__ import annotations

import pandas as pd

from tftrace.analysis.model.categories import equals, is_in, starts_with


def test_per_category_tests_answer_per_row():
    column = pd.Series(
        ["EagerLocalExecute: MatMul", None, "MatMul:MatMul", "EagerLocalExecute: Add", "x"],
        dtype="category",
    )
    assert starts_with(column, "EagerLocalExecute: ").tolist() == [True, False, False, True, False]
    assert starts_with(column, ("x", "MatMul")).tolist() == [False, False, True, False, True]
    assert is_in(column, {"x", "MatMul:MatMul"}).tolist() == [False, False, True, False, True]
    assert equals(column, "x").tolist() == [False, False, False, False, True]
    empty = pd.Series([], dtype="category")
    assert starts_with(empty, "a").tolist() == []
