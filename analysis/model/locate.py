"""Find the trace and the recorder's files behind a path the user gives.

Accepted: a tftrace run directory, a TensorBoard log directory
(``plugins/profile/<session>/<host>.xplane.pb``; several sessions: the newest, or
the one named), a session directory, or a single ``.xplane.pb`` file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tftrace.analysis.model.vocabulary import PROFILE_DIR_PARTS, XPLANE_SUFFIX
from tftrace.errors import TraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import MANIFEST_KIND, Manifest


@dataclass(frozen=True)
class Located:
    root: Path  # the run or log directory (the file's directory for a bare trace)
    xplane: Path | None
    manifest: Manifest  # Manifest.empty() when there is none (a bare trace)
    sessions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _manifest(directory: Path) -> Manifest:
    path = directory / rundir.MANIFEST
    if not path.exists():
        return Manifest.empty()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise TraceError(f"{path}: not readable JSON ({e})") from None
    if not isinstance(data, dict) or data.get("kind") != MANIFEST_KIND:
        raise TraceError(f"{path}: not a tftrace manifest")
    return Manifest.from_json(data)


def _run_root_of(xplane: Path) -> Path | None:
    """``RUN`` for ``RUN/plugins/profile/<session>/<host>.xplane.pb``."""
    parents = xplane.resolve().parents
    if len(parents) > 3 and (parents[2].name, parents[1].name) == PROFILE_DIR_PARTS:
        return parents[3]
    return None


def _pick_session(profile_dir: Path, session: str | None) -> tuple[list[str], Path | None]:
    sessions = sorted(
        p.name for p in profile_dir.iterdir() if p.is_dir() and any(p.glob(f"*{XPLANE_SUFFIX}"))
    )
    if session is not None:
        if session not in sessions:
            raise TraceError(
                f"{profile_dir}: no profile session {session!r} (have: {', '.join(sessions)})"
            )
        return sessions, profile_dir / session
    # Session names are timestamps (YYYY_MM_DD_HH_MM_SS): the last sorts newest.
    return sessions, (profile_dir / sessions[-1]) if sessions else None


def locate(path: Path, session: str | None = None) -> Located:
    if not path.exists():
        raise TraceError(f"{path}: no such file or directory")
    if path.is_file():
        root = _run_root_of(path)
        manifest = _manifest(root) if root is not None else Manifest.empty()
        return Located(root or path.parent, path, manifest)
    if not any(path.iterdir()):
        raise TraceError(f"{path}: empty directory (nothing recorded)")
    manifest = _manifest(path)
    profile_dir = path / rundir.PROFILE_DIR
    sessions: list[str] = []
    chosen: Path | None = None
    if profile_dir.is_dir():
        sessions, chosen = _pick_session(profile_dir, session)
    elif any(path.glob(f"*{XPLANE_SUFFIX}")):
        chosen = path  # a session directory itself
    if chosen is None:
        if not manifest.exists:
            raise TraceError(
                f"{path}: no profile found (expected a tftrace run directory or "
                f"plugins/profile/<session>/<host>{XPLANE_SUFFIX})"
            )
        return Located(path, None, manifest, sessions)
    hosts = sorted(chosen.glob(f"*{XPLANE_SUFFIX}"))
    notes = []
    if len(hosts) > 1:
        notes.append(f"{len(hosts)} hosts in {chosen.name}; loaded {hosts[0].name}")
    if len(sessions) > 1 and session is None:
        notes.append(f"{len(sessions)} profile sessions; loaded the newest, {chosen.name}")
    return Located(path, hosts[0], manifest, sessions, notes)
