"""The profiler's own cost, measured in the same run: the workload's steps inside the profiled
window against its steps outside it, both timed by the workload itself (``model.timed_steps``).

Every figure of a trace is of the profiled workload. The profiler costs each traced event
0.4-3.6 us on the thread that writes it (docs/predict.md, "The profiler's cost"), so it
slows a step of many small ops by tens of percent and a step of a few large ones by
nothing. A run profiled
over a window (``record --steps A:B``, ``--delay``/``--duration``) also ran steps the
profiler did not see, and the workload timed them all the same way; the two steady figures
are the profiler's cost to this workload at its recorded setting.

Each side is timed as a sweep times a run (``sweep.timing.from_steps``): a loop's steady step
(from the end of its first step to the end of its last, over the steps between), a server's
requests per second, one over it compared. The unprofiled side is the stretch after the
window (the workload warmed up), else the one before it after its first steps. A step that
straddles the profiler's start, or its stop and flush, is on neither side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from tftrace.analysis.model.run import Run
from tftrace.analysis.sweep.timing import Timing, from_steps

# Fewer timed steps than this on a side (after the first, which anchors the span) say
# nothing steady.
MIN_STEPS = 3
# Before the window the first steps trace and warm up: these are left out of the figure.
WARMUP_BEFORE = 2
AFTER, BEFORE = "after", "before"


@dataclass(frozen=True)
class ProfilerCost:
    """One step (a server's request) profiled and unprofiled, in seconds, each over how many
    steps, and which stretch the unprofiled figure took (``AFTER`` or ``BEFORE`` the window)."""

    profiled_s: float
    unprofiled_s: float
    profiled_steps: int
    unprofiled_steps: int
    unprofiled_side: str
    server: bool

    @property
    def added(self) -> float:
        """What the profiler added to a step (0.27: 27 % longer than unprofiled)."""
        return self.profiled_s / self.unprofiled_s - 1

    @property
    def unit(self) -> str:
        return "request" if self.server else "step"

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "profiled_ms": self.profiled_s * 1e3,
            "unprofiled_ms": self.unprofiled_s * 1e3,
            "added": self.added,
            "profiled_steps": self.profiled_steps,
            "unprofiled_steps": self.unprofiled_steps,
            "unprofiled_side": self.unprofiled_side,
        }


def profiled_window(run: Run) -> tuple[int, int, int] | None:
    """(start, stop, flushed) ns on the run's axis: the profiler's start, its stop, and the
    end of its flush (a step then is slowed by it, and traced by nothing), from the
    manifest's readings of the workload's clocks; None where it lacks them."""
    origin = run.origin.monotonic_ns
    profiler = run.manifest.source("tf_profiler")
    started = profiler.started_anchor or profiler.start_anchor
    stop = profiler.details.get("stop_anchor")
    stop_ns = stop.get("monotonic_ns") if isinstance(stop, dict) else None
    flush = profiler.details.get("flush_seconds")
    if origin is None or started is None or type(stop_ns) is not int:
        return None
    flush_ns = int(flush * 1e9) if isinstance(flush, (int, float)) and flush >= 0 else 0
    return started.monotonic_ns - origin, stop_ns - origin, stop_ns + flush_ns - origin


def _timed(rows: pd.DataFrame, main: Any, warmup: int) -> Timing | None:
    rows = rows.copy()
    rows.attrs["main_thread"] = main
    timing = from_steps(rows, warmup)
    if timing is None or not timing.steps or timing.steps < MIN_STEPS or timing.seconds <= 0:
        return None
    return timing


def profiler_cost(run: Run) -> ProfilerCost | None:
    """The profiler's cost to the run's steps (module doc); None where the run has no timed
    steps on both sides of its profiled window (a run profiled throughout)."""
    steps = run.timed_steps
    window = profiled_window(run)
    if steps.empty or window is None:
        return None
    lo, stop, flushed = window
    main = steps.attrs.get("main_thread")
    profiled = _timed(steps[(steps["start_ns"] >= lo) & (steps["end_ns"] <= stop)], main, 1)
    if profiled is None:
        return None
    after = _timed(steps[steps["start_ns"] > flushed], main, 1)
    side = AFTER
    if after is None:
        after, side = _timed(steps[steps["end_ns"] < lo], main, WARMUP_BEFORE), BEFORE
    if after is None or profiled.server != after.server:
        return None
    return ProfilerCost(
        profiled.per_unit,
        after.per_unit,
        int(profiled.steps or 0),
        int(after.steps or 0),
        side,
        profiled.server,
    )
