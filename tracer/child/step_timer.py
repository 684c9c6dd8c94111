"""Time the workload's steps from inside it, without the profiler.

``tftrace sweep`` compares thread settings by the steady state of a workload, not by the
life of its process (interpreter start, ``import tensorflow``, tracing and warm-up would
drown the difference). The steps are what the profiler would show as steps: outermost
``tf.function`` calls and ``tf.profiler.experimental.Trace`` blocks. Each costs two clock
reads here; the process CPU clock is read beside the wall clock so that the CPU use of a
window can be told.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

# One row per finished step: kind, name, step_num (or None), thread ident,
# start ns, end ns (CLOCK_MONOTONIC), process CPU ns at start and at end.
Row = tuple[str, str, int | None, int, int, int, int, int]

FUNCTION = "tf.function"
ANNOTATION = "annotation"


class StepTimer:
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self._depth = threading.local()
        self.errors: list[str] = []

    def install(self) -> None:
        """Wrap ``tf.function`` calls and ``Trace`` blocks; a failure only loses the timing."""
        import tensorflow as tf

        for hook in (self._wrap_function, self._wrap_trace):
            try:
                hook(tf)
            except Exception as e:  # a TF whose internals differ: time the script instead
                self.errors.append(f"{hook.__name__}: {type(e).__name__}: {e}")

    def _wrap_function(self, tf: Any) -> None:
        cls = type(tf.function(lambda: None))
        original = cls.__call__
        if getattr(original, "__tftrace_wrapped__", False):
            return
        rows = self.rows
        depth = self._depth

        @functools.wraps(original)
        def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
            # Calls made while another function traces or runs are not steps.
            level = getattr(depth, "n", 0)
            if level:
                return original(fn, *args, **kwargs)
            depth.n = 1
            cpu0 = time.process_time_ns()
            t0 = time.monotonic_ns()
            try:
                return original(fn, *args, **kwargs)
            finally:
                t1 = time.monotonic_ns()
                depth.n = 0
                name = str(getattr(fn, "__name__", None) or getattr(fn, "_name", "function"))
                ident = threading.get_ident()
                rows.append((FUNCTION, name, None, ident, t0, t1, cpu0, time.process_time_ns()))

        call.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
        cls.__call__ = call

    def _wrap_trace(self, tf: Any) -> None:
        cls = tf.profiler.experimental.Trace
        init, exit_ = cls.__init__, cls.__exit__
        if getattr(init, "__tftrace_wrapped__", False):
            return
        rows = self.rows

        @functools.wraps(init)
        def start(trace: Any, name: Any, **kwargs: Any) -> None:
            init(trace, name, **kwargs)  # TF starts its clock at creation; so do we
            step = kwargs.get("step_num")
            try:
                step = None if step is None else int(step)
            except (TypeError, ValueError):
                step = None
            trace.__tftrace_start__ = (str(name), step, time.monotonic_ns(), time.process_time_ns())

        @functools.wraps(exit_)
        def stop(trace: Any, *exc: Any) -> Any:
            t1 = time.monotonic_ns()
            cpu1 = time.process_time_ns()
            begun = getattr(trace, "__tftrace_start__", None)
            if begun is not None:
                name, step, t0, cpu0 = begun
                rows.append((ANNOTATION, name, step, threading.get_ident(), t0, t1, cpu0, cpu1))
            return exit_(trace, *exc)

        start.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
        cls.__init__ = start
        cls.__exit__ = stop

    def to_json(self) -> dict[str, Any]:
        columns = ("kind", "name", "step_num", "thread", "start_ns", "end_ns", "cpu0_ns", "cpu1_ns")
        return {
            "clock": "CLOCK_MONOTONIC",
            "main_thread": threading.main_thread().ident,
            "columns": list(columns),
            "rows": [list(r) for r in self.rows],
            "errors": self.errors,
        }
