"""Telling a trace of TF's executor before it learned its cheap ops, on hand-built op
tables: such ops are in the trace only while every op is still taken as expensive."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.executor_learning import (
    CHEAP_NS,
    MIN_CHEAP_OPS,
    cheap_ops,
    note_for,
)

INTER = np.array([7, 8])


def ops_of(durations_ns: list[int], thread: int = 7, every_ns: int = 10_000) -> pd.DataFrame:
    start = np.arange(len(durations_ns), dtype=np.int64) * every_ns
    return pd.DataFrame(
        {"thread": thread, "start_ns": start, "end_ns": start + np.array(durations_ns)}
    )


def test_the_cheap_ops_of_the_inter_op_threads_in_the_window_are_counted():
    ops = pd.concat([ops_of([500, 1_500, 5_000, 20_000]), ops_of([500] * 3, thread=99)])
    assert cheap_ops(ops, INTER, 0, 10**9) == (2, 0.5)  # thread 99 is not an inter-op one
    assert cheap_ops(ops, INTER, 20_000, 10**9) == (0, 0.0)  # the last two only
    assert cheap_ops(ops, INTER, 10**9, 2 * 10**9) == (0, 0.0)  # none in the window


def test_an_unlearned_executor_is_named_and_a_learned_one_is_not():
    n = MIN_CHEAP_OPS * 2
    unlearned = ops_of([CHEAP_NS // 2] * n + [50_000] * n)  # half the ops cheap
    note = note_for(*cheap_ops(unlearned, INTER, 0, 10**12))
    assert note is not None and "50%" in note and "--steps 100:" in note
    learned = ops_of([CHEAP_NS // 2] * 10 + [50_000] * n)  # a few cheap: still timed so
    assert note_for(*cheap_ops(learned, INTER, 0, 10**12)) is None
    few = ops_of([CHEAP_NS // 2] * (MIN_CHEAP_OPS - 1))  # too few to tell
    assert note_for(*cheap_ops(few, INTER, 0, 10**12)) is None
