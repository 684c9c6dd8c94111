"""The one place terminal output is set up: every renderer prints through a console made here.

Text from a run (op, thread, process and host names, paths, the script's argv, manifest
values) reaches the terminal as text: through ``text`` / ``say`` (``formatting.printable``:
no control character, no line of the name's making) and never as rich markup (the consoles
made here do not parse it, and ``table``'s titles, headers and cells are ``Text``)."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tftrace.analysis.render.formatting import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

REPORT_WIDTH = 100  # the reports are laid out for 100 columns, whatever the terminal


def console(
    *, width: int | None = REPORT_WIDTH, stderr: bool = False, file: Any = None, **options: Any
) -> Console:
    """A rich Console for tftrace's output: ``width`` None follows the terminal, at least
    ``REPORT_WIDTH`` columns being used when the terminal is narrower only where the caller
    asks for it with ``wide_console``. No markup and no emoji codes are read in what it
    prints (a name such as ``[link=...]x[/link]`` or ``:smile:`` stays as it is)."""
    from rich.console import Console

    options = {"markup": False, "emoji": False, **options}
    return Console(width=width, stderr=stderr, file=file, **options)


def wide_console() -> Console:
    """A console as wide as the terminal, and never narrower than ``REPORT_WIDTH``."""
    return console(width=max(REPORT_WIDTH, console(width=None).width))


def capture(render: Callable[[Console], None], width: int = REPORT_WIDTH) -> str:
    """What ``render`` prints on a console, as plain text (no colours)."""
    buffer = io.StringIO()
    render(console(width=width, file=buffer, color_system=None))
    return buffer.getvalue()


def text(value: object, style: str = "") -> Text:
    """``value`` as rich ``Text``: through ``printable``, never parsed as markup (a ``str``
    enum as its value, as rich shows a string)."""
    from rich.text import Text

    shown = str.__str__(value) if isinstance(value, str) else value
    return Text(printable(shown), style=style)


def say(out: Console, line: object, style: str = "") -> None:
    """Print one line that may hold names from a run: as text (``text``), not highlighted."""
    out.print(text(line, style))


def table(title: str = "", **options: Any) -> Table:
    """A rich ``Table`` whose title, column headers and cells given as strings are shown as
    ``text`` (``add_column`` and ``add_row`` convert them): a cell cannot be markup."""
    return _plain_table()(title=text(title, "table.title") if title else None, **options)


def _cell(value: Any) -> Any:
    return text(value) if isinstance(value, str) else value


@functools.cache
def _plain_table() -> type[Table]:
    from rich.table import Table

    class PlainTable(Table):
        def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
            super().add_column(_cell(header), *args, **kwargs)

        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            super().add_row(*(_cell(r) for r in renderables), **kwargs)

    return PlainTable
