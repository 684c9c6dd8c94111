"""What a path given to a command holds (``kind_of``: one run, a sweep or a directory of hosts),
which hosts a multi-host directory holds, and which of the job's tasks it lacks.

A multi-host directory holds one run directory per host, as ``tftrace record -o DIR/{task}``
under a job's launcher or ``tftrace capture`` write them: ``DIR/worker-0/manifest.json``, ...
Each host is named by its task (from TF_CONFIG, recorded in its manifest), else by its
directory. The job's tasks come from the cluster spec any host recorded: a task of the spec
without a directory is missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tftrace.errors import TftraceError
from tftrace.tracer.cluster_task import task_names
from tftrace.tracer.manifest_reader import MANIFEST_KIND, Manifest
from tftrace.tracer.rundir import MANIFEST, read_json_or_none


class NotAClusterDir(TftraceError):
    """A directory that holds no host's run directory; the message says why in one line."""


@dataclass(frozen=True)
class HostDir:
    """One host's run directory: ``name`` (its task, e.g. ``worker-0``) and its manifest."""

    name: str
    path: Path
    manifest: Manifest


@dataclass(frozen=True)
class Layout:
    """The hosts found (by task order), and the job's tasks that have no directory."""

    path: Path
    hosts: tuple[HostDir, ...]
    missing: tuple[str, ...] = field(default=())


def _manifest(path: Path) -> Manifest | None:
    data = read_json_or_none(path / MANIFEST)
    if not isinstance(data, dict) or data.get("kind") != MANIFEST_KIND:
        return None
    return Manifest.from_json(data)


PathKind = Literal["run", "sweep", "hosts"]


def kind_of(path: str | os.PathLike[str]) -> PathKind:
    """What ``path`` holds, decided here for every command: ``"sweep"`` (a sweep directory: it
    holds sweep.json, whose reader says if it is damaged), ``"hosts"`` (a directory of hosts:
    no run itself, but it holds run directories) or ``"run"`` (anything else: a run
    directory, a TensorBoard log directory, a bare .xplane.pb, a path loading will refuse)."""
    from tftrace.tracer.sweep import SWEEP_FILE  # here: the recorder it imports is not light

    path = Path(path)
    if not path.is_dir() or (path / MANIFEST).exists():
        return "run"
    if (path / SWEEP_FILE).exists():
        return "sweep"
    return "hosts" if any(_manifest(p) is not None for p in path.iterdir() if p.is_dir()) else "run"


def is_cluster_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is not a run itself but holds at least one run directory."""
    return kind_of(path) == "hosts"


def find_hosts(path: str | os.PathLike[str]) -> Layout:
    """The hosts of a multi-host directory; ``NotAClusterDir`` when it holds none."""
    path = Path(path)
    if not path.is_dir():
        raise NotAClusterDir(f"{path}: not a directory")
    found = []
    for sub in sorted(p for p in path.iterdir() if p.is_dir()):
        manifest = _manifest(sub)
        if manifest is not None:
            task = manifest.task
            found.append(HostDir(task.name if task else sub.name, sub, manifest))
    if not found:
        raise NotAClusterDir(
            f"{path}: holds no host's run directory (DIR/<task>/manifest.json, as "
            "`tftrace record -o DIR/{task}` writes them)"
        )
    spec: list[str] = []
    for host in found:
        task = host.manifest.task
        if task is not None and task.cluster:
            spec = task_names({k: list(v) for k, v in task.cluster.items()})
            break
    order = {name: i for i, name in enumerate(spec)}
    found.sort(key=lambda h: (order.get(h.name, len(order)), h.name))
    names = {h.name for h in found}
    return Layout(path, tuple(found), tuple(n for n in spec if n not in names))
