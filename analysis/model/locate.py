"""Find the trace and the recorder's files behind a path the user gives.

Accepted: a tftrace run directory, a TensorBoard log directory
(``plugins/profile/<session>/<host>.xplane.pb``; several sessions: the newest, or
the one named), a session directory, or a single ``.xplane.pb`` file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tftrace.analysis.model.vocabulary import PROFILE_DIR_PARTS, XPLANE_SUFFIX
from tftrace.errors import TraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import Manifest, read_manifest
from tftrace.tracer.safe_read import FileAbsent


@dataclass(frozen=True)
class Located:
    root: Path  # the run or log directory (the file's directory for a bare trace)
    xplane: Path | None
    manifest: Manifest  # Manifest.empty() when there is none (a bare trace)
    sessions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _manifest(directory: Path) -> Manifest:
    """The directory's manifest; empty when there is none, ``UnreadableFile`` (a
    ``TraceError``: one line) when it is damaged or no regular file."""
    try:
        return read_manifest(directory / rundir.MANIFEST)
    except FileAbsent:
        return Manifest.empty()


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
    try:
        return _locate(path, session)
    except TraceError:
        raise
    except OSError as e:  # a folder that cannot be listed, a name too long
        raise TraceError(f"{e.filename or path}: cannot read ({e.strerror})") from None
    except ValueError as e:  # a path with a NUL byte
        raise TraceError(f"{path!r}: not a usable path ({e})") from None


def _locate(path: Path, session: str | None) -> Located:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file or directory") from None
    if stat.S_ISREG(mode):
        root = _run_root_of(path)
        manifest = _manifest(root) if root is not None else Manifest.empty()
        # The file the user named is read through a link, if it is one: its own choice.
        return Located(root or path.parent, path.resolve() if path.is_symlink() else path, manifest)
    if not stat.S_ISDIR(mode):
        raise TraceError(f"{path}: not a regular file or directory")
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
