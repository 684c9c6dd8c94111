"""The one place terminal output is set up: every renderer prints through a console made here."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

REPORT_WIDTH = 100  # the reports are laid out for 100 columns, whatever the terminal


def console(
    *, width: int | None = REPORT_WIDTH, stderr: bool = False, file: Any = None, **options: Any
) -> Console:
    """A rich Console for tftrace's output: ``width`` None follows the terminal, at least
    ``REPORT_WIDTH`` columns being used when the terminal is narrower only where the caller
    asks for it with ``wide_console``."""
    from rich.console import Console

    return Console(width=width, stderr=stderr, file=file, **options)


def wide_console() -> Console:
    """A console as wide as the terminal, and never narrower than ``REPORT_WIDTH``."""
    return console(width=max(REPORT_WIDTH, console(width=None).width))


def capture(render: Callable[[Console], None], width: int = REPORT_WIDTH) -> str:
    """What ``render`` prints on a console, as plain text (no colours)."""
    buffer = io.StringIO()
    render(console(width=width, file=buffer, color_system=None))
    return buffer.getvalue()
