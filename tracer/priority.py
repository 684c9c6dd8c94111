"""The recorder's own threads and processes yield to the workload's.

The OS sampler and py-spy wake up 100 and 20 times a second. Under the default policy a
waking task preempts whatever runs on its CPU; on a machine the workload keeps busy, that
is one of the workload's threads, often in the middle of a parallel op whose other shards
then wait for it. Under SCHED_BATCH a waking task never preempts: it runs at the next tick
or when a CPU goes idle, a few milliseconds later at most, and its readings carry their
own times. Its share of the CPU is unchanged (same nice value).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def yielding_to_the_workload() -> Iterator[bool]:
    """Threads and processes started inside inherit SCHED_BATCH from the calling thread;
    the calling thread gets its own policy back after. Yields whether the policy was set
    (not on systems without it)."""
    try:
        before = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        yield False
        return
    try:
        yield True
    finally:
        os.sched_setscheduler(0, *before)


def policy_name(pid: int = 0) -> str:
    """The scheduling policy of a thread or process (0: the calling thread), for manifests."""
    try:
        policy = os.sched_getscheduler(pid)
    except (AttributeError, OSError):
        return "unknown"
    names = {os.SCHED_OTHER: "normal", os.SCHED_BATCH: "batch", os.SCHED_IDLE: "idle"}
    return names.get(policy, str(policy))
