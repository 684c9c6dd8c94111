"""The TF profiler over steps A to B-1 of the workload (``--steps A:B``, ``step_range.py``).

The step timer's wrapping of ``tf.function`` and ``Trace`` calls ``begin`` and ``end`` around
each candidate step; here they are counted on the main thread, outermost only (a
``tf.function`` called inside a ``Trace(step_num=)`` block, or inside another function, is
part of that step). The profiler starts right before step A begins and stops right after
step B-1 ends, on the workload's own thread, so the trace holds exactly those steps.
"""

from __future__ import annotations

import threading
from typing import Any

from ..step_range import StepRange, format_steps
from .profiler_window import ProfilerWindow


def _steps(n: int) -> str:
    return f"{n} step{'s' * (n != 1)}"


class StepWindow:
    def __init__(self, profiler: ProfilerWindow, steps: StepRange) -> None:
        self.profiler = profiler
        self.first, self.until = steps  # until: the first step not recorded
        self.begun = 0  # outermost steps begun on the main thread (the next one's index)
        self.ended = 0
        self._depth = 0
        self._main = threading.main_thread().ident

    def begin(self) -> None:
        if threading.get_ident() != self._main:
            return
        self._depth += 1
        if self._depth == 1:
            if self.begun == self.first:
                self.profiler.open()  # it catches its own failures
            self.begun += 1

    def end(self) -> None:
        if threading.get_ident() != self._main or self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0:
            self.ended += 1
            if self.ended == self.until:
                self.profiler.stop()

    def finish(self, hook_errors: list[str]) -> None:
        """At the workload's end: flush a window still open; the status says which steps the
        trace holds, or why it holds none (``hook_errors``: the step timer's, when it could
        not wrap ``tf.function`` or ``Trace``)."""
        asked = format_steps((self.first, self.until))
        uncounted = f"; steps could not be counted: {'; '.join(hook_errors)}" * bool(hook_errors)
        self.profiler.stop(
            never_opened=f"the workload ran {_steps(self.begun)}; step {self.first} never "
            f"came (steps {asked}){uncounted}"
        )
        status = self.profiler.status
        status["steps"] = self.describe()
        cut = self.until is not None and self.begun < self.until
        if status.get("status") == "recorded" and cut:
            status["note"] = (
                f"window cut at step {self.begun}: the workload ended after "
                f"{_steps(self.begun)}, so the trace holds steps "
                f"{format_steps((self.first, self.begun))} of {asked}"
            )

    def describe(self) -> dict[str, Any]:
        """Asked (first, end), the steps that ran, and those inside the window."""
        last = self.begun if self.until is None else min(self.until, self.begun)
        inside = [self.first, last] if last > self.first else None
        return {"asked": [self.first, self.until], "ran": self.begun, "in_window": inside}
