"""Stream a child's output live to our terminal while keeping a copy in the run directory."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import IO

from .safe_files import open_new


class Tee:
    def __init__(self, source: IO[bytes], live: IO[bytes] | None, copy_path: Path) -> None:
        self._source = source
        self._live = live
        self._copy_path = copy_path
        self._thread = threading.Thread(
            target=self._run, name=f"tftrace-tee-{copy_path.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        fd = self._source.fileno()
        with open_new(self._copy_path) as copy:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                copy.write(chunk)
                copy.flush()
                if self._live is None:
                    continue
                try:
                    self._live.write(chunk)
                    self._live.flush()
                except (OSError, ValueError):
                    pass  # our terminal went away; keep the copy going

    def join(self, timeout_s: float = 10.0) -> None:
        self._thread.join(timeout=timeout_s)
