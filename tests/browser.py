"""Headless Chromium for the page and Perfetto tests: where it is and how it must be started.

The machine has no network: the background-networking flags stop Chromium from reaching
out (and failing) at every start; a fresh profile directory is given per run.
"""

from __future__ import annotations

import shutil
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
