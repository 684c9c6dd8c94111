"""Tests on a categorical column, done on its categories: one test per distinct name instead
of one per event, and no column of millions of Python strings (``astype(str)`` on the events'
``name`` made one per call: the largest cost of an analysis of a long trace)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import pandas as pd


def where(column: pd.Series, test: Callable[[pd.Index], np.ndarray | pd.Index]) -> np.ndarray:
    """A bool per row: ``test`` of its category's text (vectorised over the categories);
    False where the value is missing."""
    categories = column.cat.categories.astype(str)
    hit = np.r_[np.asarray(test(categories), dtype=bool), False]  # code -1 (missing) -> False
    return hit[column.cat.codes.to_numpy()]


def starts_with(column: pd.Series, prefix: str | tuple[str, ...]) -> np.ndarray:
    return where(column, lambda c: c.str.startswith(prefix))


def is_in(column: pd.Series, values: Collection[str]) -> np.ndarray:
    return where(column, lambda c: c.isin(list(values)))


def equals(column: pd.Series, value: str) -> np.ndarray:
    return where(column, lambda c: c == value)
