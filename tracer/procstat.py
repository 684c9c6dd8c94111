"""The C helpers of ``_procstat.c`` (the OS sampler's reader, the identity watcher's wait), or
None where they were not built (no compiler at install): their callers then fall back to
Python loops that do the same."""

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
