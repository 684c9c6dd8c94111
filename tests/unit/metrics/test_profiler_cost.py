"""The profiler's cost from a run's timed steps on both sides of its profiled window, worked out
by hand."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from builders import make_run
from tftrace.analysis.metrics.profiler_cost import AFTER, BEFORE, profiled_window, profiler_cost
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.timed_steps import COLUMNS

MS = 1_000_000
MAIN = 7


def _steps(starts_ms: list[float], length_ms: float, thread: int = MAIN) -> list[list[object]]:
    return [
        ["tf.function", "train_step", None, thread, int(t * MS), int((t + length_ms) * MS), 0, 0]
        for t in starts_ms
    ]


def _run(rows: list[list[object]], window_ms: tuple[float, float], flush_s: float = 0.0) -> Run:
    """A run at origin 0 whose profiler ran over ``window_ms`` (then flushed ``flush_s``)."""
    lo, hi = (int(t * MS) for t in window_ms)
    anchor = {"wall_ns": 1, "monotonic_ns": lo}
    profiler = {
        "state": "recorded",
        "started_anchor": anchor,
        "stop_anchor": {"wall_ns": 2, "monotonic_ns": hi},
        "flush_seconds": flush_s,
    }
    run = make_run(manifest={"sources": {"tf_profiler": profiler}})
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs["main_thread"] = MAIN
    return dataclasses.replace(run, timed_steps=frame)


def test_steps_after_the_window_are_the_unprofiled_side():
    # 5 steps of 10 ms every 10 ms before the window (warm-up), 6 of 14 ms in it, 8 of 10 ms after
    before = _steps([0, 10, 20, 30, 40], 10)
    inside = _steps([100 + 14 * i for i in range(6)], 14)
    after = _steps([300 + 10 * i for i in range(8)], 10)
    cost = profiler_cost(_run(before + inside + after, (95, 200)))
    assert cost is not None and cost.unprofiled_side == AFTER and not cost.server
    # steady: from the first step's end to the last's, over the steps between
    assert cost.profiled_s == pytest.approx(0.014) and cost.profiled_steps == 5
    assert cost.unprofiled_s == pytest.approx(0.010) and cost.unprofiled_steps == 7
    assert cost.added == pytest.approx(0.4)
    assert cost.to_json()["unprofiled_ms"] == pytest.approx(10.0)


def test_without_steps_after_the_window_those_before_it_after_the_warmup_count():
    # the first two steps (tracing, warm-up) are slow and left out
    before = _steps([0, 50], 40) + _steps([90 + 10 * i for i in range(6)], 10)
    inside = _steps([300 + 12 * i for i in range(5)], 12)
    cost = profiler_cost(_run(before + inside, (250, 400)))
    assert cost is not None and cost.unprofiled_side == BEFORE
    assert cost.unprofiled_s == pytest.approx(0.010)
    assert cost.profiled_s == pytest.approx(0.012)


def test_a_step_across_the_profiler_start_or_its_flush_is_on_neither_side():
    inside = _steps([100 + 10 * i for i in range(5)], 10)
    straddling = _steps([95], 10) + _steps([150], 30)  # across the start; into the flush
    after = _steps([400 + 10 * i for i in range(5)], 10)
    run = _run(inside + straddling + after, (99, 160), flush_s=0.2)
    assert profiled_window(run) == (99 * MS, 160 * MS, 360 * MS)
    cost = profiler_cost(run)
    assert cost is not None
    assert cost.profiled_steps == 4 and cost.unprofiled_steps == 4


def test_a_run_profiled_throughout_or_with_too_few_steps_outside_has_no_cost():
    inside = _steps([100 + 10 * i for i in range(8)], 10)
    assert profiler_cost(_run(inside, (0, 1000))) is None
    assert profiler_cost(_run(inside + _steps([500, 510, 520], 10), (99, 200))) is None
    assert (
        profiler_cost(dataclasses.replace(_run(inside, (99, 200)), manifest=make_run().manifest))
        is None
    )


def test_a_server_is_compared_by_its_requests_per_second():
    # two threads, a request every 4 ms on each (2 ms long) in the window, every 2 ms after it
    def served(t0: float, period: float, n: int) -> list[list[object]]:
        return _steps([t0 + period * i for i in range(n)], 2, 1) + _steps(
            [t0 + 1 + period * i for i in range(n)], 2, 2
        )

    cost = profiler_cost(_run(served(100, 4, 20) + served(400, 2, 20), (90, 200)))
    assert cost is not None and cost.server
    assert cost.added == pytest.approx(1.0, rel=0.1)
