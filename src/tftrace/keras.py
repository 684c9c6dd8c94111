"""``tftrace.keras.ProfileCallback``: record a window of batches of ``model.fit``.

Like the TensorBoard callback's ``profile_batch``, with tftrace's whole recording: the
TF profiler, the OS sampler, py-spy and thread identity start at the first batch of the
window and stop after its last, and each batch in it is marked as a step
(``Trace("train", step_num=batch)``), so the analyses use exactly those batches.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import keras
import tensorflow as tf

from tftrace.tracer.in_process import Profile, warn


class ProfileCallback(keras.callbacks.Callback):
    """Record batches ``batches[0]`` up to (not including) ``batches[1]`` of ``model.fit``.

    Batches are counted from 0 across epochs, as a Python slice counts (``(100, 120)`` is 20
    batches); ``(100, None)`` records from batch 100 to the end of training.

    Args:
        output: the run directory to create (default: a new one under ``./tftrace-runs/``).
        batches: the window.
        options: as ``tftrace.profile`` takes them (``name``, ``pyspy=False``, ...).

    A window that never arrives (training ends first) prints one line and records nothing;
    one that training cuts short is recorded up to where it ended.

    Example::

        callback = tftrace.keras.ProfileCallback("runs/fit", batches=(100, 120))
        model.fit(dataset, epochs=3, callbacks=[callback])
    """

    def __init__(
        self,
        output: str | os.PathLike[str] | None = None,
        batches: tuple[int, int | None] = (10, 20),
        **options: Any,
    ) -> None:
        super().__init__()
        start, stop = batches
        if start < 0 or (stop is not None and stop <= start):
            raise ValueError(f"batches={batches!r}: need 0 <= start < stop (a Python slice)")
        self.start, self.stop = start, stop
        self.output = output
        self.options = options
        self.profile: Profile | None = None
        self._batch = 0  # batches seen across epochs
        self._step: Any = None  # the open Trace of the current batch

    @property
    def path(self) -> Any:
        """The run directory, once the window opened (None before, or when nothing recorded)."""
        return None if self.profile is None else self.profile.path

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._batch = 0

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._batch == self.start and self.profile is None:
            self.profile = Profile(
                self.output,
                how="keras",
                steps=(self.start, self.stop),
                steps_counted="model.fit batches, across epochs",
                **self.options,
            )
            self.profile.start()
        if self.profile is not None and self.profile.recording:
            self._step = tf.profiler.experimental.Trace("train", step_num=self._batch, _r=1)
            self._step.__enter__()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._end_step()
        self._batch += 1
        if self.stop is not None and self._batch == self.stop:
            self._finish()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._end_step()
        if self.profile is None:
            warn(
                f"ProfileCallback: training ended after {self._batch} batches, before batch "
                f"{self.start}: nothing was recorded"
            )
            return
        if self.profile.recording:
            self._finish()

    def _end_step(self) -> None:
        if self._step is not None:
            step, self._step = self._step, None
            step.__exit__(None, None, None)

    def _finish(self) -> None:
        if self.profile is not None and self.profile.recording:
            self.profile.recorded_steps = (self.start, self._batch)
            self.profile.stop()
            if self.stop is not None and self._batch < self.stop:
                print(
                    f"tftrace: training ended at batch {self._batch}, before batch {self.stop}",
                    file=sys.stderr,
                )
