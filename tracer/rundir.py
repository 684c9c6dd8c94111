"""The layout of a run directory, and reading/writing its manifest.

A run directory is self-describing: everything later steps need is in it, and
it is also a TensorBoard log directory (the profiler writes under
``plugins/profile/``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.analysis.model.vocabulary import PROFILE_DIR_PARTS, XPLANE_SUFFIX

from .safe_files import atomic_output, safe_dir, write_text_atomic
from .safe_read import read_json_object_or_none

SCHEMA_VERSION = 1

MANIFEST = "manifest.json"
PROFILE_DIR = Path(*PROFILE_DIR_PARTS)
STDOUT_LOG = Path("workload") / "stdout.log"
STDERR_LOG = Path("workload") / "stderr.log"
WORKLOAD_REPORT = Path("workload") / "report.json"
STEPS = Path("workload") / "steps.json"
CHILD_CONFIG = Path("workload") / "config.json"
ATTACH_CONFIG = Path("workload") / "attach.json"  # an in-code recording's helper process
OS_SAMPLES_DIR = Path("os_threads")
OS_THREADS_TABLE = OS_SAMPLES_DIR / "threads.json"
# The machine beside the workload (machine_reader.py): machine-*.npz chunks and this table.
MACHINE_TABLE = OS_SAMPLES_DIR / "machine.json"
IDENTITY = Path("thread_identity.json")
PYSPY_TRACE = Path("pyspy") / "trace.json"
PYSPY_LOG = Path("pyspy") / "pyspy.log"


@dataclass(frozen=True)
class RunDir:
    path: Path

    def __truediv__(self, rel: str | Path) -> Path:
        return self.path / rel

    def xplane_files(self) -> list[Path]:
        return sorted((self.path / PROFILE_DIR).glob(f"*/*{XPLANE_SUFFIX}"))


def default_run_path(base: Path, name: str | None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    stem = f"{stamp}-{name}" if name else stamp
    path = base / stem
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stem}-{n}"
    return path


def create(path: Path) -> RunDir:
    """Create an empty run directory; refuse to write into a non-empty one, or one that is a
    symbolic link (``safe_files.UnsafePathError``)."""
    safe_dir(path, create=False)  # a link is refused before it is looked into
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"output directory is not empty: {path}")
    safe_dir(path)
    for sub in (STDOUT_LOG.parent, OS_SAMPLES_DIR, PYSPY_TRACE.parent):
        safe_dir(path / sub, root=path)
    return RunDir(path)


def write_json_atomic(path: Path, data: Any, indent: int | None = 2) -> None:
    """Write via a temporary file so a reader never sees half a file (nor writes through a
    link: ``safe_files``)."""
    write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=False, default=str) + "\n")


def write_npz_atomic(path: Path, arrays: dict[str, Any]) -> None:
    """Write numpy columns as ``.npz`` via a temporary file, so a reader never sees half a
    chunk (numpy is imported here, lazily: the recorder starts without it)."""
    import numpy as np

    with atomic_output(path) as f:
        np.savez(f, **arrays)


def read_json_or_none(path: Path) -> dict[str, Any] | None:
    """A JSON object written by the recorder, or None if it is absent or damaged (or not a
    regular file, or nested too deeply: ``safe_read``)."""
    return read_json_object_or_none(path)
