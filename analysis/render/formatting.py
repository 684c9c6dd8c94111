"""Figures as text, the same in the terminal, the HTML report and anywhere else."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd


def is_missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, numbers.Real) and math.isnan(value)


def fmt(value: Any, spec: str = "") -> str:
    """A figure as text: '-' for missing values, ``spec`` for numbers."""
    if is_missing(value):
        return "-"
    if spec and isinstance(value, numbers.Real) and not isinstance(value, bool):
        return format(value, spec)
    return str(value)


def parallelism_text(value: Any) -> str:
    """0 means no Eigen worker ever ran for the op: it ran inline on its own thread."""
    return "inline" if value == 0 else fmt(value, ".2f")


POOL_HEADERS = ("pool", "threads", "configured", "busy", "mean", "peak", "util.", "cores", "class")


def pool_rows(pools: pd.DataFrame) -> list[tuple[str, ...]]:
    """The pools table (``concurrency.pools_table``) as text cells, under ``POOL_HEADERS``."""
    return [
        (
            str(r.pool),
            str(r.threads),
            fmt(r.configured, ".0f"),
            str(r.observed),
            fmt(r.mean, ".2f"),
            str(r.peak),
            fmt(r.utilisation, ".0%"),
            fmt(r.core_share, ".0%"),
            fmt(r.core_class),
        )
        for r in pools.itertuples()
    ]


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table; '|' in a cell (a name from the trace) is escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), line(["---"] * len(headers)), *map(line, rows)])


def printable(text: object) -> str:
    """``text`` with control characters and newlines shown as escapes (``\\x1b``, ``\\n``):
    names from a run (a process's, a thread's) never move the cursor or forge a line."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )
