"""Time the workload's steps from inside it, without the profiler.

``tftrace sweep`` compares thread settings by the steady state of a workload, not by the
life of its process (interpreter start, ``import tensorflow``, tracing and warm-up would
drown the difference). The steps are what the profiler would show as steps: outermost
``tf.function`` calls and ``tf.profiler.experimental.Trace`` blocks. Each costs two clock
reads here; the process CPU clock is read beside the wall clock so that the CPU use of a
window can be told.

Outermost calls of a ``ConcreteFunction`` are timed the same way (kind ``tf.function``, named
by its graph): what a loaded SavedModel's ``signatures["serving_default"](x)`` is, or
``f.get_concrete_function(spec)(x)``. One thread-local depth counter is shared by both
wrappers, so a concrete function called inside a ``tf.function`` call (or the other way
round) is part of that call, not a second step. Calls on every thread are kept, each with its
thread's ident: a server's requests are its calls on its handler threads
(``analysis/sweep/timing.py`` tells a server from a loop).

The same wrapping tells the profiler's steps window (``step_window.py``) where steps begin
and end: ``on_begin`` runs before an outermost ``tf.function`` call and before a
``Trace(..., step_num=)`` block is created (TF's ``Trace`` starts its event at creation, and
only when the profiler runs), ``on_end`` after the call returns and after the block's event
has ended. ``keep_rows=False`` keeps no rows (the window alone).

A loop over a ``tf.data`` dataset in eager Python (``for batch in ds:`` with no
``tf.function`` in it) has no call to time but its iterator's: each outermost ``next()`` that
returns an element is a row of kind ``iteration``, so that such a loop is timed by its passes
(``analysis/sweep/timing.py`` takes them only where no function or step block ran), not by
the script, whose end holds the iterator's teardown (0 or 0.1-0.2 s, run to run).

Rows go into a flat ``array('q')``, not a list of tuples: thousands of long-lived tuples
make the garbage collector rescan TensorFlow's large heap, which cost ~50 us per call in
a loop of tiny tf.function calls.
"""

from __future__ import annotations

import functools
import threading
import time
from array import array
from collections.abc import Callable
from typing import Any

from tftrace.analysis.model.vocabulary import STEP_NUM_ARG

FUNCTION = "tf.function"
ANNOTATION = "annotation"
ITERATION = "iteration"
COLUMNS = ("kind", "name", "step_num", "thread", "start_ns", "end_ns", "cpu0_ns", "cpu1_ns")
# kind codes in the array; a step number rides along only with STEP_ANNOTATION
KINDS = {0: FUNCTION, 1: ANNOTATION, 2: ANNOTATION, 3: ITERATION}
FUNCTION_CODE, ANNOTATION_CODE, STEP_ANNOTATION_CODE, ITERATION_CODE = 0, 1, 2, 3
MASK = (1 << 63) - 1  # thread idents kept as non-negative int64


def _function_name(fn: Any) -> Any:
    return getattr(fn, "__name__", None) or "function"


def _concrete_name(fn: Any) -> Any:
    """A concrete function's graph's name: the Python function's (``serve``), or for a
    SavedModel's signature ``signature_wrapper_<function>``."""
    return getattr(getattr(fn, "graph", None), "name", None) or "concrete function"


def _defining(base: type, method: str) -> list[type]:
    """TensorFlow's subclasses of ``base``, at any depth, that define ``method`` themselves;
    RuntimeError where none does (a TF whose internals differ)."""
    todo: list[type] = [base]
    classes: list[type] = []
    while todo:
        subclasses: list[type] = todo.pop().__subclasses__()
        for sub in subclasses:
            todo.append(sub)
            if method in vars(sub) and sub.__module__.startswith("tensorflow"):
                classes.append(sub)
    if not classes:
        raise RuntimeError(f"no subclass of {base.__name__} with its own {method} found")
    return classes


class StepTimer:
    def __init__(
        self,
        marker: str | None = None,
        *,
        keep_rows: bool = True,
        on_begin: Callable[[], None] | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.marker = marker
        self.keep_rows = keep_rows
        self.on_begin, self.on_end = on_begin, on_end
        # One row per finished step, 8 int64 each: kind code, name id, step number, thread
        # ident (masked to 63 bits), start ns, end ns (CLOCK_MONOTONIC), process CPU ns at
        # the start and at the end.
        self.data = array("q")
        self.names: dict[Any, int] = {}
        self._depth = threading.local()
        self._names_lock = threading.Lock()
        self.errors: list[str] = []

    def _name_id(self, name: Any) -> int:
        found = self.names.get(name)
        if found is None:
            # A server's threads meet a new function at once: one id per name, whichever
            # thread comes first (a lock on this rare path only).
            with self._names_lock:
                found = self.names.setdefault(name, len(self.names))
        return found

    def install(self) -> None:
        """Wrap ``tf.function`` and ``ConcreteFunction`` calls, ``Trace`` blocks and tf.data
        iterators' ``next()``; a failure only loses the timing."""
        import tensorflow as tf

        hooks = [self._wrap_function, self._wrap_concrete, self._wrap_trace]
        if self.keep_rows:  # passes are timed, never a profiled window's steps
            hooks.append(self._wrap_iterator)
        for hook in hooks:
            try:
                hook(tf)
            except Exception as e:  # a TF whose internals differ: time the script instead
                self.errors.append(f"{hook.__name__}: {type(e).__name__}: {e}")

    def _wrap_function(self, tf: Any) -> None:
        self._wrap_call(type(tf.function(lambda: None)), _function_name)

    def _wrap_concrete(self, tf: Any) -> None:
        """Every class of TF's concrete functions that defines its own ``__call__`` (in TF
        2.16-2.21 one: ``ConcreteFunction``; a SavedModel's signature, ``_WrapperFunction``,
        inherits it). Found among the subclasses of ``tf.types.experimental.ConcreteFunction``
        rather than by tracing a function here: tracing would start TF's runtime, and with it
        size the pools before the workload's own code runs."""
        for cls in _defining(tf.types.experimental.ConcreteFunction, "__call__"):
            self._wrap_call(cls, _concrete_name)

    def _wrap_call(self, cls: Any, name_of: Callable[[Any], Any]) -> None:
        original = cls.__call__
        if getattr(original, "__tftrace_wrapped__", False):
            return
        # Locals, not module attributes: this runs around every call (~2 us alone, ~6 us
        # inside TF: benchmarks/step_timer_overhead.py).
        extend, name_id, depth = self.data.extend, self._name_id, self._depth
        monotonic, cpu_clock = time.monotonic_ns, time.process_time_ns
        get_ident = threading.get_ident
        keep, begin, end = self.keep_rows, self.on_begin, self.on_end

        @functools.wraps(original)
        def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
            # Calls made while another function traces or runs are not steps.
            if getattr(depth, "n", 0):
                return original(fn, *args, **kwargs)
            depth.n = 1
            if begin is not None:
                begin()
            t0 = monotonic()
            try:
                return original(fn, *args, **kwargs)
            finally:
                t1 = monotonic()
                depth.n = 0
                if keep:
                    name = name_id(name_of(fn))
                    # The steady span needs the CPU clock at step ends only. pthread_t is
                    # an address: masked to fit the int64 array whatever it is.
                    row = (FUNCTION_CODE, name, 0, get_ident() & MASK, t0, t1, 0, cpu_clock())
                    extend(row)
                if end is not None:
                    end()

        call.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
        cls.__call__ = call

    def _wrap_iterator(self, tf: Any) -> None:
        """Every class of TF's dataset iterators that defines its own ``__next__`` (in TF
        2.16-2.21 ``OwnedIterator``, what ``iter(dataset)`` gives), found among the subclasses
        of ``tf.data.Iterator``: making one would start TF's runtime (``_wrap_concrete``)."""
        for cls in _defining(tf.data.Iterator, "__next__"):
            self._wrap_next(cls)

    def _wrap_next(self, cls: Any) -> None:
        original = cls.__next__
        if getattr(original, "__tftrace_wrapped__", False):
            return
        extend, depth = self.data.extend, self._depth
        monotonic, cpu_clock = time.monotonic_ns, time.process_time_ns
        get_ident = threading.get_ident
        name = self._name_id("tf.data iterator")  # one name for every pass: looked up once

        @functools.wraps(original)
        def next_element(iterator: Any) -> Any:
            # next() inside a function (while it traces) or another's next() is not a pass
            if getattr(depth, "n", 0):
                return original(iterator)
            depth.n = 1
            t0 = monotonic()
            try:
                element = original(iterator)
            finally:
                depth.n = 0
            # StopIteration (the loop's end) raised above: only passes that got an element
            extend((ITERATION_CODE, name, 0, get_ident() & MASK, t0, monotonic(), 0, cpu_clock()))
            return element

        next_element.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
        cls.__next__ = next_element

    def _wrap_trace(self, tf: Any) -> None:
        cls = tf.profiler.experimental.Trace
        init, exit_ = cls.__init__, cls.__exit__
        if getattr(init, "__tftrace_wrapped__", False):
            return
        data, name_id = self.data, self._name_id
        marker, keep, begin, end = self.marker, self.keep_rows, self.on_begin, self.on_end

        @functools.wraps(init)
        def start(trace: Any, name: Any, **kwargs: Any) -> None:
            step = kwargs.get(STEP_NUM_ARG)
            if step is not None and begin is not None:
                trace.__tftrace_step__ = True
                begin()  # before TF's event, which exists only if the profiler runs then
            init(trace, name, **kwargs)  # TF starts its clock at creation; so do we
            # TF itself opens a Trace per tf.function call: keep only steps and the marker.
            if not keep or (step is None and name != marker):
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
            try:
                return exit_(trace, *exc)
            finally:
                if end is not None and getattr(trace, "__tftrace_step__", False):
                    end()  # after TF's event ended: the profiler may stop here

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
