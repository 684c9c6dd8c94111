"""Start and stop the TF profiler inside the workload, over a chosen window."""

from __future__ import annotations

import os
import threading
import time
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

    def stop(self, never_opened: str | None = None, settle: bool = False) -> None:
        """Stop and flush the profiler (once). ``never_opened``: the status's error when
        the window never opened (default: the delay's). ``settle``: at the workload's end,
        first wait for its threads to stop ending (``wait_for_settled_threads``); never
        mid-run, where it would stretch the window past the step it ends at."""
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

                if settle:
                    self.status["settled_threads"] = wait_for_settled_threads()
                stop_anchor = clock_anchor()
                t0 = time.monotonic()
                tf.profiler.experimental.stop()
                self.status["flush_seconds"] = round(time.monotonic() - t0, 3)
                self.status["stop_anchor"] = stop_anchor
                self.status["status"] = "recorded"
            except Exception as e:
                self.status.update(status="failed", error=f"{type(e).__name__}: {e}")
            self._running = False


SETTLE_QUIET_S = 0.1  # no thread started or ended for this long
SETTLE_MAX_S = 2.0


def wait_for_settled_threads(
    quiet_s: float = SETTLE_QUIET_S, max_s: float = SETTLE_MAX_S, task_dir: str = "/proc/self/task"
) -> bool:
    """Wait until this process's threads stop coming and going (at most ``max_s``); whether
    they did.

    TF's profiler collects every thread's event buffer when it stops; a thread that exits at
    that moment can crash it (seen in a multi-worker job: a segfault in ``profiler.stop`` in
    1 of 9 runs, as the distributed runtime's threads wound down after the last step)."""
    end = time.monotonic() + max_s
    try:
        last, since = sorted(os.listdir(task_dir)), time.monotonic()
        while time.monotonic() < end:
            time.sleep(quiet_s / 5)
            now = sorted(os.listdir(task_dir))
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return True
    except OSError:
        return False
    return False
