"""Time the workload's steps from inside it, without the profiler.

``tftrace sweep`` compares thread settings by the steady state of a workload, not by the
life of its process (interpreter start, ``import tensorflow``, tracing and warm-up would
drown the difference). The steps are what the profiler would show as steps: outermost
``tf.function`` calls and ``tf.profiler.experimental.Trace`` blocks. Each costs two clock
reads here; the process CPU clock is read beside the wall clock so that the CPU use of a
window can be told.

Rows go into a flat ``array('q')``, not a list of tuples: thousands of long-lived tuples
make the garbage collector rescan TensorFlow's large heap, which cost ~50 us per call in
a loop of tiny tf.function calls.
"""

from __future__ import annotations

import functools
import threading
import time
from array import array
from typing import Any

from tftrace.analysis.model.vocabulary import STEP_NUM_ARG

FUNCTION = "tf.function"
ANNOTATION = "annotation"
COLUMNS = ("kind", "name", "step_num", "thread", "start_ns", "end_ns", "cpu0_ns", "cpu1_ns")
# kind codes in the array; a step number rides along only with STEP_ANNOTATION
KINDS = {0: FUNCTION, 1: ANNOTATION, 2: ANNOTATION}
FUNCTION_CODE, ANNOTATION_CODE, STEP_ANNOTATION_CODE = 0, 1, 2
MASK = (1 << 63) - 1  # thread idents kept as non-negative int64


class StepTimer:
    def __init__(self, marker: str | None = None) -> None:
        self.marker = marker
        # One row per finished step, 8 int64 each: kind code, name id, step number, thread
        # ident (masked to 63 bits), start ns, end ns (CLOCK_MONOTONIC), process CPU ns at
        # the start and at the end.
        self.data = array("q")
        self.names: dict[Any, int] = {}
        self._depth = threading.local()
        self.errors: list[str] = []

    def _name_id(self, name: Any) -> int:
        found = self.names.get(name)
        if found is None:
            found = self.names[name] = len(self.names)
        return found

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
        # Locals, not module attributes: this runs around every call (~2 us alone, ~6 us
        # inside TF: benchmarks/step_timer_overhead.py).
        extend, name_id, depth = self.data.extend, self._name_id, self._depth
        monotonic, cpu_clock = time.monotonic_ns, time.process_time_ns
        get_ident = threading.get_ident

        @functools.wraps(original)
        def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
            # Calls made while another function traces or runs are not steps.
            if getattr(depth, "n", 0):
                return original(fn, *args, **kwargs)
            depth.n = 1
            t0 = monotonic()
            try:
                return original(fn, *args, **kwargs)
            finally:
                t1 = monotonic()
                depth.n = 0
                name = name_id(getattr(fn, "__name__", None) or "function")
                # The steady span needs the CPU clock at step ends only. pthread_t is an
                # address: masked to fit the int64 array whatever it is.
                extend((FUNCTION_CODE, name, 0, get_ident() & MASK, t0, t1, 0, cpu_clock()))

        call.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
        cls.__call__ = call

    def _wrap_trace(self, tf: Any) -> None:
        cls = tf.profiler.experimental.Trace
        init, exit_ = cls.__init__, cls.__exit__
        if getattr(init, "__tftrace_wrapped__", False):
            return
        data, name_id = self.data, self._name_id

        marker = self.marker

        @functools.wraps(init)
        def start(trace: Any, name: Any, **kwargs: Any) -> None:
            init(trace, name, **kwargs)  # TF starts its clock at creation; so do we
            step = kwargs.get(STEP_NUM_ARG)
            # TF itself opens a Trace per tf.function call: keep only steps and the marker.
            if step is None and name != marker:
                return
            try:
                step = None if step is None else int(step)
            except (TypeError, ValueError):
                step = None
            trace.__tftrace_start__ = (str(name), step, time.monotonic_ns(), time.process_time_ns())

        @functools.wraps(exit_)
        def stop(trace: Any, *exc: Any) -> Any:
            begun = getattr(trace, "__tftrace_start__", None)
            if begun is not None:
                t1 = time.monotonic_ns()
                cpu1 = time.process_time_ns()
                name, step, t0, cpu0 = begun
                kind = ANNOTATION_CODE if step is None else STEP_ANNOTATION_CODE
                ident = threading.get_ident() & MASK
                data.extend((kind, name_id(name), step or 0, ident, t0, t1, cpu0, cpu1))
            return exit_(trace, *exc)

        start.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
        cls.__init__ = start
        cls.__exit__ = stop

    def rows(self) -> list[list[Any]]:
        names = {i: str(n) for n, i in self.names.items()}
        out = []
        for i in range(0, len(self.data), len(COLUMNS)):
            kind, name, step, thread, *times = self.data[i : i + len(COLUMNS)]
            step_num = step if kind == STEP_ANNOTATION_CODE else None
            out.append([KINDS[kind], names[name], step_num, thread, *times])
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "clock": "CLOCK_MONOTONIC",
            "main_thread": (threading.main_thread().ident or 0) & MASK,
            "columns": list(COLUMNS),
            "rows": self.rows(),
            "errors": self.errors,
        }
