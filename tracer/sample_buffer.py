"""The OS sampler of a served process (``tftrace.serve``), kept for the last few minutes.

The sampler runs in a helper process (``serve_helper.py``), as ``tftrace.profile``'s does,
and writes the usual ``os_threads/`` chunks into a private directory every second, deleting
those older than the buffer. The served process's data endpoint reads the chunks of a window
back from there (``window``): files are the whole protocol between the two.
"""

from __future__ import annotations

import io
import math
import time
import zipfile
from pathlib import Path
from typing import Any

from . import rundir
from .os_sampler import COLUMNS, OsThreadSampler

FLUSH_EVERY_S = 1.0  # a window's last second reaches the endpoint this late at most
DEFAULT_KEEP_S = 300.0  # the buffer: the longest window a capture can ask for
CHUNKS = "samples-*.npz"


class RollingSampler(OsThreadSampler):
    """``OsThreadSampler`` that keeps only the chunks of the last ``keep_s`` seconds."""

    def __init__(self, out_dir: Path, hz: float, keep_s: float = DEFAULT_KEEP_S) -> None:
        # No machine readings: a capture takes a window of the thread chunks alone.
        super().__init__(out_dir, hz, flush_every_s=FLUSH_EVERY_S, machine_hz=0)
        self.keep_ns = int(keep_s * 1e9)
        self.keep_chunks = max(2, math.ceil(keep_s / FLUSH_EVERY_S) + 1)

    def running(self) -> bool:
        """Whether it samples still (it stops by itself once the process is gone)."""
        return self._thread is not None and self._thread.is_alive()

    def _flush(self) -> None:
        super()._flush()
        for old in sorted(self.out_dir.glob(CHUNKS))[: -self.keep_chunks]:
            old.unlink(missing_ok=True)
        # Threads that exited before the buffer's start leave the table (at the next flush):
        # a process that starts tf.data threads for hours would otherwise rewrite them all.
        cutoff = time.monotonic_ns() - self.keep_ns
        for tid, info in list(self.threads.items()):
            if info.get("exited") and info["last_seen_ns"] < cutoff:
                del self.threads[tid]


def _read(chunk: Path) -> dict[str, Any] | None:
    import numpy as np

    try:
        with np.load(chunk) as data:
            return {c: data[c] for c in COLUMNS}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
        return None  # deleted by the rotation since the listing, or damaged


def newest_sample_ns(root: Path) -> int | None:
    """The time (monotonic ns) of the newest sample flushed under ``root``, by the thread
    table: the sampler writes it after the chunk, so every row up to then is on disk, and
    every thread of those rows is in it."""
    table = rundir.read_json_or_none(root / rundir.OS_THREADS_TABLE)
    seen = [t.get("last_seen_ns") for t in (table or {}).get("threads", [])]
    return max((t for t in seen if isinstance(t, int)), default=None)


def wait_for(root: Path, until_ns: int, timeout_s: float, alive: Any = None) -> bool:
    """Wait until the sampler under ``root`` has written a sample at or after ``until_ns``
    (monotonic); False after ``timeout_s``, or at once when ``alive()`` says it has ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        newest = newest_sample_ns(root)
        if newest is not None and newest >= until_ns:
            return True
        if time.monotonic() >= deadline or (alive is not None and not alive()):
            return False
        time.sleep(0.1)


def window(root: Path, lo_ns: int, hi_ns: int, tids: set[int]) -> tuple[bytes, dict[str, Any]]:
    """The samples of threads ``tids`` taken in [lo_ns, hi_ns] (monotonic), as one ``.npz``
    chunk of the run directory's columns, and what it holds: ``samples`` (readings),
    ``rows``, ``first_ns`` and ``last_ns``, and ``buffer_first_ns``, the oldest sample kept
    (a window that begins before it is cut)."""
    import numpy as np

    parts, oldest = [], None
    for chunk in sorted((root / rundir.OS_SAMPLES_DIR).glob(CHUNKS)):
        data = _read(chunk)
        if data is None or not len(data["t_ns"]):
            continue
        t = data["t_ns"]
        oldest = int(t.min()) if oldest is None else min(oldest, int(t.min()))
        if int(t.max()) < lo_ns or int(t.min()) > hi_ns:
            continue
        keep = (t >= lo_ns) & (t <= hi_ns) & np.isin(data["tid"], list(tids))
        parts.append({c: data[c][keep] for c in COLUMNS})
    columns = {
        c: np.concatenate([p[c] for p in parts]) if parts else np.zeros(0, np.int64)
        for c in COLUMNS
    }
    buffer = io.BytesIO()
    np.savez(buffer, **columns)  # type: ignore[arg-type]
    t = columns["t_ns"]
    facts = {
        "samples": len(np.unique(t)),
        "rows": len(t),
        "first_ns": int(t.min()) if len(t) else None,
        "last_ns": int(t.max()) if len(t) else None,
        "buffer_first_ns": oldest,
    }
    return buffer.getvalue(), facts


def threads_table(root: Path, lo_ns: int, hi_ns: int) -> dict[str, Any] | None:
    """``os_threads/threads.json`` of the sampler under ``root``, with only the threads seen
    in [lo_ns, hi_ns] (monotonic)."""
    table = rundir.read_json_or_none(root / rundir.OS_THREADS_TABLE)
    if table is None:
        return None
    table["threads"] = [
        t
        for t in table.get("threads", [])
        if t.get("first_seen_ns", 0) <= hi_ns and t.get("last_seen_ns", hi_ns) >= lo_ns
    ]
    return table
