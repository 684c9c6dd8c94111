"""Start and stop the TF profiler inside the workload, over a chosen window."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from ..environment import clock_anchor


class ProfilerWindow:
    """The TF profiler over [delay, delay + duration] seconds of the workload's own code,
    or, not armed, from ``open()`` to ``stop()`` (``step_window.py`` calls them at steps).

    ``tf.profiler.experimental.start`` does not initialise the TF runtime, so the
    workload's own ``tf.config.threading`` calls still take effect.
    """

    def __init__(self, logdir: str, delay_s: float, duration_s: float | None) -> None:
        self.logdir = logdir
        self.delay_s = delay_s
        self.duration_s = duration_s
        self.status: dict[str, Any] = {"status": "not started"}
        self._lock = threading.Lock()
        self._running = False
        self._closed = False
        # Called once the trace is flushed, outside the lock: what the process should note as
        # the window closes (the BLAS libraries' pools, ``thread_libraries.py``). Never raises.
        self.on_stop: Callable[[], None] | None = None

    def arm(self) -> None:
        if self.delay_s <= 0:
            self._start()
        else:
            self._timer(self.delay_s, self._start)

    def open(self) -> None:
        """Start the profiler now (once; never after ``stop``)."""
        self._start()

    def _timer(self, seconds: float, fn: Any) -> None:
        timer = threading.Timer(seconds, fn)
        timer.name = "tftrace-profiler-window"
        timer.daemon = True
        timer.start()

    def _start(self) -> None:
        with self._lock:
            if self._closed or self._running:
                return
            try:
                import tensorflow as tf

                before = clock_anchor()
                tf.profiler.experimental.start(self.logdir)
                after = clock_anchor()
            except Exception as e:
                self.status = {"status": "failed", "error": f"{type(e).__name__}: {e}"}
                return
            self._running = True
            self.status = {"status": "recording", "start_anchor": before, "started_anchor": after}
            if self.duration_s is not None:
                self._timer(self.duration_s, self.stop)

    def stop(self, never_opened: str | None = None) -> None:
        """Stop and flush the profiler (once). ``never_opened``: the status's error when
        the window never opened (default: the delay's)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._running:
                if self.status["status"] == "not started":
                    self.status = {
                        "status": "failed",
                        "error": never_opened
                        or "the workload ended before the "
                        "profiling window opened (--delay too long?)",
                    }
                return
            try:
                import tensorflow as tf

                stop_anchor = clock_anchor()
                t0 = time.monotonic()
                tf.profiler.experimental.stop()
                self.status["flush_seconds"] = round(time.monotonic() - t0, 3)
                self.status["stop_anchor"] = stop_anchor
                self.status["status"] = "recorded"
            except Exception as e:
                self.status.update(status="failed", error=f"{type(e).__name__}: {e}")
            self._running = False
        if self.on_stop is not None:
            with contextlib.suppress(Exception):
                self.on_stop()
