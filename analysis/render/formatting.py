"""Figures as text, the same in the terminal, the HTML report and anywhere else."""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd

from tftrace.printable import printable as printable  # the terminal's escaper


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
    """A markdown table; every cell (a name from the trace) through ``markdown_text``."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_text(c) for c in cells) + " |"

    rule = "| " + " | ".join(["---"] * len(headers)) + " |"
    return "\n".join([line(headers), rule, *map(line, rows)])


# --- One escaper per medium ---------------------------------------------------------------
# Names in a run (tf.function, op, thread and process names, hostnames, the script's argv,
# manifest fields) are the user's text: each medium shows them through its own function here,
# never raw. The terminal: ``printable`` (rich tables: ``console.text`` / ``console.table``,
# which use it); markdown: ``markdown_text``; CSV: ``csv_cell``; HTML: ``html_text``.


_MARKDOWN_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MARKDOWN_SPECIALS = frozenset("\\`*_[]()!#|")
_MARKDOWN_LIST = re.compile(r"(\d+\.|[-+])(?= |-|$)")  # "1. ", "- ", "+ ", "---"


def markdown_text(text: object) -> str:
    """``text`` shown as itself in markdown (TensorBoard's text summaries): ``& < >`` as
    entities (no raw HTML: no ``<img src=...>``), markdown's specials (``[ ] ( ) ! * _ ` | #``
    ...) backslash-escaped (no link, image, emphasis, heading or table cell of the name's
    making), and control characters and newlines as ``printable`` shows them (no new line).
    At its start, nothing that would begin a list (``- ``, ``+ ``, ``1. ``) or a code block
    (an indent) where the text starts a line."""
    shown = "".join(
        _MARKDOWN_ENTITIES.get(c) or (f"\\{c}" if c in _MARKDOWN_SPECIALS else c)
        for c in printable(text)
    )
    body = shown.lstrip(" ")
    indent = "&#32;" * (len(shown) - len(body))
    marker = _MARKDOWN_LIST.match(body)
    if marker:  # the marker's last character escaped: "1\\. ", "\\- "
        body = f"{body[: marker.end() - 1]}\\{body[marker.end() - 1 :]}"
    return indent + body


# OWASP's CSV-injection list: a spreadsheet runs a cell beginning with one of these as a
# formula. A leading ' marks a cell as text; a value that begins with ' gets one too, so that
# ``from_csv_cell`` gives every value back exactly.
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(value: Any) -> Any:
    """A string as a CSV cell a spreadsheet shows as text (``=HYPERLINK(...)`` ->
    ``'=HYPERLINK(...)``); anything else as it is."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_STARTS):
        return "'" + value
    return value


def from_csv_cell(value: Any) -> Any:
    """``csv_cell`` undone: the string that was written."""
    if isinstance(value, str) and value.startswith("'"):
        return value[1:]
    return value


def csv_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``csv_cell`` applied to every text value (object, string and categorical
    columns), just before it is written as CSV; numbers stay numbers, missing values missing."""
    return _map_text(frame, csv_cell)


def from_csv_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``csv_cells`` undone, on a frame read back from CSV."""
    return _map_text(frame, from_csv_cell)


def _map_text(frame: pd.DataFrame, change: Callable[[Any], Any]) -> pd.DataFrame:
    out = frame.copy(deep=False)
    for column in frame.columns:
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            categories = values.cat.categories
            if categories.dtype == object or pd.api.types.is_string_dtype(categories.dtype):
                out[column] = values.cat.rename_categories([change(c) for c in categories])
        elif values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
            changed = [change(v) for v in values]  # None stays None, NaN NaN
            out[column] = pd.Series(changed, index=values.index, dtype=values.dtype)
    return out


def html_text(text: object) -> str:
    """``text`` for an HTML page, in element text and quoted attribute values alike
    (``html.escape`` with quotes): everything not written by tftrace itself goes through it."""
    return html.escape(str(text), quote=True)
