"""The C helpers of ``_procstat.c`` (the OS sampler's reader, the identity watcher's wait), or
None where they were not built (no compiler at install): their callers then fall back to
Python loops that do the same. Also the layout of a /proc stat line, which both read."""

from __future__ import annotations

from types import ModuleType

ABI = 2  # as _procstat.c's PROCSTAT_ABI: a stale build from an older source is ignored


def _load() -> ModuleType | None:
    try:
        from tftrace.tracer import _procstat  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_procstat, "ABI", None) != ABI:
        return None
    module: ModuleType = _procstat
    return module


native = _load()


# Fields of a stat line after the name's ')', from 0 (field 3, state): ppid is field 4, utime
# 14, stime 15, starttime 22, processor 39 (proc(5)).
STATE, PPID, UTIME, STIME, STARTTIME, PROCESSOR = 0, 1, 11, 12, 19, 36


def split_stat(raw: bytes) -> tuple[bytes, list[bytes]]:
    """(the line up to the name's closing ')', the fields after it). The name sits in
    parentheses and may itself contain spaces or ')'."""
    close = raw.rindex(b")")
    return raw[:close], raw[close + 2 :].split()


def name_of(head: bytes) -> str:
    """The name (comm) in a stat line's head (``split_stat``)."""
    return head[head.index(b"(") + 1 :].decode(errors="replace")
