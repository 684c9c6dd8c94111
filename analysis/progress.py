"""Where a long load or analysis is: stages reported from deep inside, shown by the CLI.

``stage("decoding the trace")`` marks the start of a stage; it costs nothing unless a caller
listens (``reporting(callback)``, a context variable, so that no function between the CLI and
the decoder needs a parameter for it). The CLI draws a bar from these on a terminal only
(``commands.stages_bar``); ``tftrace.load`` and ``tftrace.analyze`` print nothing.

A stage boundary is also where the last stage's temporaries (arrays of millions of rows) have
just been freed: ``stage`` hands their pages back to the OS. glibc keeps freed blocks of up to
32 MiB in its heap once it has seen large blocks come and go, so without this the process's
resident memory grows by every stage's temporaries (by 400 MiB over the 350 MiB that load()
peaks at, on a 2 M-event trace; benchmarks/analysis_speed.py).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_listener: ContextVar[Callable[[str], None] | None] = ContextVar("tftrace_progress", default=None)

# The stages of a load and of an analysis, in order: a bar's total.
LOAD_STAGES = ("reading the trace", "decoding the trace", "building the tables")
ANALYZE_STAGES = (
    "finding the steps",
    "pools and concurrency",
    "queue delay and CPU time",
    "op types",
    "wall-time breakdown",
    "warm-up and core use",
    "findings",
    "Python functions",
)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
        return trim
    except (AttributeError, OSError):  # not glibc: its allocator returns memory its own way
        return None


_trim = _malloc_trim()


def stage(name: str) -> None:
    """A stage named ``name`` starts now (for whoever listens); the memory the last stage
    freed goes back to the OS."""
    if _trim is not None:
        _trim(0)
    listener = _listener.get()
    if listener is not None:
        listener(name)


@contextmanager
def reporting(listener: Callable[[str], None]) -> Iterator[None]:
    """Call ``listener(stage name)`` as each stage starts, inside the block."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
