"""One table model for every output: a title, headers, rows of text cells and notes, drawn by
a terminal back end (``print_table``: a rich table) and an HTML back end (``html_table``).

The single-run report, the diff, the sweep and the cross-host outputs build ``Table`` values
from their results and hand them to a back end, so a table looks the same in every command
and its cells are made safe in one place: names from a run (ops, threads, hosts) reach the
terminal as text, never rich markup, and the page only escaped. A cell that links somewhere
is a ``Link``; the HTML back end draws it as an anchor, the terminal as its text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tftrace.analysis.render.console import say
from tftrace.analysis.render.console import table as plain_table
from tftrace.analysis.render.formatting import html_text

if TYPE_CHECKING:
    from rich.console import Console


@dataclass(frozen=True)
class Link:
    """A cell that links to ``href`` (a page of the report) in HTML; its ``text`` elsewhere."""

    text: str
    href: str

    def __str__(self) -> str:
        return self.text


Cell = str | Link


@dataclass(frozen=True)
class Table:
    """A table of text cells. The first ``text_columns`` columns, and those at ``text_at``,
    are text (left-aligned); the others are figures (right-aligned). ``empty`` is what an
    output says for a table without rows (``"<title>: none"`` in the terminal)."""

    title: str
    headers: tuple[str, ...]
    rows: Sequence[Sequence[Cell]]
    text_columns: int = 1
    text_at: Collection[int] = ()
    notes: tuple[str, ...] = ()
    empty: str = "none"
    options: Mapping[str, Any] = field(default_factory=dict)  # rich Table options
    draw_empty: bool = False  # without rows: the headers alone, not the ``empty`` line
    # rich column options by column index (wrapping, widths); a column's justification
    # comes from ``is_text``
    column_options: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    nowrap: Collection[int] = ()  # columns whose HTML cells never wrap (names, links)

    def is_text(self, column: int) -> bool:
        return column < self.text_columns or column in self.text_at


def rich_table(table: Table) -> object:
    """``table`` as a rich ``Table`` (cells shown as text: ``console.table``)."""
    options = {"title_justify": "left", **table.options}
    shown = plain_table(table.title, **options)
    for i, header in enumerate(table.headers):
        shown.add_column(
            header,
            justify="left" if table.is_text(i) else "right",
            **table.column_options.get(i, {}),
        )
    for row in table.rows:
        shown.add_row(*(str(c) for c in row))
    return shown


def print_table(console: Console, table: Table) -> None:
    """Draw ``table`` on the terminal, then its notes; ``"<title>: none"`` without rows (unless
    ``draw_empty``)."""
    if not table.rows and not table.draw_empty:
        say(console, f"{table.title}: {table.empty}" if table.title else table.empty)
    else:
        console.print(rich_table(table))
    for line in table.notes:
        say(console, line)


NOWRAP = ' style="white-space: nowrap"'


def html_cell(cell: Cell) -> str:
    """One cell for a page: a ``Link`` as an anchor, text escaped."""
    if isinstance(cell, Link):
        return f'<a href="{html_text(cell.href)}">{html_text(cell.text)}</a>'
    return html_text(cell)


def html_table(table: Table, title_tag: str = "") -> str:
    """``table`` as an HTML table (cells escaped here, so no caller can forget it), after its
    title in ``title_tag`` when one is given, followed by its notes."""
    if not table.rows and not table.draw_empty:
        body = f'<p class="none">{html_text(table.empty)}</p>'
    else:

        def cls(i: int) -> str:
            wrap = NOWRAP if i in table.nowrap else ""
            return wrap if table.is_text(i) else f' class="num"{wrap}'

        head = "".join(f"<th{cls(i)}>{html_text(h)}</th>" for i, h in enumerate(table.headers))
        rows = "".join(
            "<tr>" + "".join(f"<td{cls(i)}>{html_cell(c)}</td>" for i, c in enumerate(r)) + "</tr>"
            for r in table.rows
        )
        body = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    title = ""
    if title_tag and table.title:
        title = f"<{title_tag}>{html_text(table.title)}</{title_tag}>"
    notes = "".join(f'<p class="note">{html_text(n)}</p>' for n in table.notes)
    return title + body + notes


def html_pairs(pairs: Iterable[tuple[str, str]]) -> str:
    """Name and value pairs as a two-column HTML table (the run's facts, a straggler's
    figures), escaped as ``html_table``'s cells are."""
    rows = "".join(f"<tr><th>{html_text(k)}</th><td>{html_text(v)}</td></tr>" for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'
