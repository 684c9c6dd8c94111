"""The runs the tab shows: tftrace run directories at or under TensorBoard's log directory.

A run is a directory whose ``manifest.json`` is a tftrace manifest (its ``kind``) and that holds
a trace; it is named as TensorBoard names runs, by its path relative to the log directory (``.``
for the log directory itself). A run's *fingerprint* is what its analysis depends on: the size and
modification time of every file the recorder wrote and of each verification's ``sweep.json``,
the tftrace version and the version of the tab's data (``DATA_FORMAT``); a cached analysis is
used only while its fingerprint holds.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.analysis.model.vocabulary import XPLANE_SUFFIX
from tftrace.errors import TraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import read_manifest
from tftrace.version import __version__

# What a recording writes and an analysis reads (files, or folders of them).
RECORDED = (
    rundir.MANIFEST,
    rundir.IDENTITY,
    rundir.OS_SAMPLES_DIR,
    rundir.PYSPY_TRACE,
    rundir.PROFILE_DIR,
    rundir.STEPS,
    rundir.WORKLOAD_REPORT,
)
# A finished `tftrace analyze --verify` of the run: the tab shows what it found.
VERIFICATIONS = "verify*/sweep.json"
# Folders inside a run that hold recordings' parts or tftrace's outputs, never another run.
NOT_RUNS = frozenset({"plugins", "os_threads", "pyspy", "workload", "tftrace", "report_files"})
# The shape of the tab's data (dashboard.py): raised when it changes, so that data cached by an
# earlier tftrace of the same version is computed again (2: a server's requests_view).
DATA_FORMAT = 2
RESCAN_S = 5.0  # TensorBoard asks whether the plugin is active on every reload


@dataclass(frozen=True)
class RunInfo:
    """A run found under the log directory: its TensorBoard-style ``name`` and what its
    manifest says about it, for the run picker."""

    name: str
    path: Path
    label: str  # the run's own --name, else its directory's
    status: str | None
    created: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "status": self.status,
            "created": self.created,
        }


def read_run(path: Path, name: str) -> RunInfo | None:
    """The run at ``path``, or None when its manifest is missing, unreadable or not tftrace's,
    or it holds no trace (a sweep's timing runs: what the tab shows comes from the trace)."""
    if not any(_regular(p) for p in (path / rundir.PROFILE_DIR).glob(f"*/*{XPLANE_SUFFIX}")):
        return None
    try:  # a regular file only: a FIFO or a link to a device would hold the scan
        manifest = read_manifest(path / rundir.MANIFEST)
    except TraceError:
        return None
    label = manifest.name or (path.name if name == "." else name)
    return RunInfo(name, path, label, manifest.status, manifest.created)


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def find_runs(logdir: Path) -> dict[str, RunInfo]:
    """Every run at or under ``logdir`` by name, in name order; unreadable folders are passed by."""
    found: dict[str, RunInfo] = {}
    for where, folders, files in os.walk(logdir):
        here = Path(where)
        if rundir.MANIFEST in files and _regular(here / rundir.MANIFEST):
            name = here.relative_to(logdir).as_posix()
            run = read_run(here, name)
            if run is not None:
                found[name] = run
        folders[:] = sorted(f for f in folders if f not in NOT_RUNS and not f.startswith("."))
    return dict(sorted(found.items()))


class RunIndex:
    """``find_runs`` of one log directory, walked again at most every ``RESCAN_S`` seconds.

    The walk reads files, so it runs outside the lock: while one request walks, the others
    answer the runs last found (before the first walk ends, each request walks itself)."""

    def __init__(self, logdir: Path | None) -> None:
        self.logdir = logdir
        self._lock = threading.Lock()
        self._runs: dict[str, RunInfo] = {}
        self._at = -RESCAN_S
        self._walkers = 0  # walks under way
        self._walked = False

    def runs(self) -> dict[str, RunInfo]:
        if self.logdir is None:
            return {}
        with self._lock:
            due = time.monotonic() - self._at >= RESCAN_S
            if not due or (self._walkers and self._walked):
                return self._runs
            self._walkers += 1
        try:
            found = find_runs(self.logdir)
        finally:
            with self._lock:
                self._walkers -= 1
        with self._lock:
            self._runs, self._at, self._walked = found, time.monotonic(), True
            return found


def fingerprint(path: Path) -> dict[str, Any]:
    """The tftrace version, the tab data's format and (relative path, size, mtime ns) of every
    recorded file."""
    files = []
    for part in RECORDED:
        target = path / part
        found = sorted(target.rglob("*")) if target.is_dir() else [target]
        for file in found:
            try:
                info = file.stat()
            except OSError:
                continue
            if file.is_file():
                files.append([file.relative_to(path).as_posix(), info.st_size, info.st_mtime_ns])
    for file in sorted(path.glob(VERIFICATIONS)):
        try:
            info = file.stat()
        except OSError:  # a dangling link: nothing to read
            continue
        files.append([file.relative_to(path).as_posix(), info.st_size, info.st_mtime_ns])
    return {"tftrace": __version__, "format": DATA_FORMAT, "files": files}
