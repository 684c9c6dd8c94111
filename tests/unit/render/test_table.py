"""The one table model: the terminal back end shows every cell as text, the HTML back end
escapes it, and both say the same of a table without rows."""

from __future__ import annotations

from tftrace.analysis.render.console import capture
from tftrace.analysis.render.table import Link, Table, html_pairs, html_table, print_table

EVIL = "[link=https://x]op[/link]\x1b[2J<b>"


def _text(table: Table) -> str:
    return capture(lambda console: print_table(console, table))


def test_terminal_cells_are_text_and_figures_right_aligned():
    table = Table("ops", ("op", "ms"), [(EVIL, "1.5"), ("b", "12.25")], notes=("read me",))
    text = _text(table)
    assert "[link=https://x]op[/link]" in text  # markup shown, not obeyed
    assert "\x1b" not in text and "\\x1b[2J" in text  # the control character shown
    rows = [line for line in text.splitlines() if "1.5" in line or "12.25" in line]
    assert rows[0].index("1.5") + len("1.5") == rows[1].index("12.25") + len("12.25")
    assert text.rstrip().endswith("read me")


def test_html_cells_are_escaped_and_links_drawn():
    table = Table("t<", ("name", "n"), [(Link(EVIL, 'x"y.html'), "2")], text_at=(1,))
    page = html_table(table, "h3")
    assert page.startswith("<h3>t&lt;</h3><table>")
    assert '<a href="x&quot;y.html">' in page and "<b>" not in page
    assert '<td class="num">' not in page  # column 1 is text here


def test_a_table_without_rows_says_so_or_draws_its_headers():
    empty = Table("findings", ("id",), [])
    assert _text(empty).strip() == "findings: none"
    assert '<p class="none">none</p>' in html_table(empty)
    drawn = Table("findings", ("id",), [], draw_empty=True)
    assert "id" in _text(drawn) and "<th>id</th>" in html_table(drawn)


def test_columns_that_do_not_wrap_and_name_value_pairs():
    table = Table("", ("host", "state"), [("w<0", "long words")], text_columns=2, nowrap=(0,))
    page = html_table(table)
    assert '<th style="white-space: nowrap">host</th><th>state</th>' in page
    assert '<td style="white-space: nowrap">w&lt;0</td><td>long words</td>' in page
    pairs = html_pairs([("host", EVIL)])
    assert pairs.startswith('<table class="kv"><tbody><tr><th>host</th><td>')
    assert "<b>" not in pairs and "&lt;b&gt;" in pairs
