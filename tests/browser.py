"""Headless Chromium for the page and Perfetto tests: where it is and how it must be started.

The machine has no network: the background-networking flags stop Chromium from reaching
out (and failing) at every start; a fresh profile directory is given per run.
"""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM: str | None = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)


class Dom(HTMLParser):
    """Tags with their attributes, h2 headings, table cells and all text of a document (the
    report and the TensorBoard tab, as Chromium rendered them)."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.h2: list[str] = []
        self.cells: list[str] = []
        self._open: list[str] = []
        self.feed(source)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open and self._open[-1] == "h2":
            self.h2.append(data)
        if self._open and self._open[-1] == "td":
            self.cells.append(data)

    def having(self, attribute: str) -> list[str]:
        return [str(a[attribute]) for _, a in self.tags if attribute in a]
