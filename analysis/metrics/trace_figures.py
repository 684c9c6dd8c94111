"""The figures an export converts: ``trace_figures(run, window, warmup_steps) -> TraceFigures``.

An export (``analysis/export``) stays whole: every slice and counter of the trace, every step,
and only marks the analysed window (and a server's requests of it). So it needs figures of the
whole trace, not a ``Metrics`` (one window's every figure, twice the export's cost): the steps,
each pool's busy threads over the trace, the py-spy stacks as the Python-time metric names
their functions, and the window with its basis and a server's requests, as ``tftrace analyze``
resolves and measures them. Each is computed at first use, so an export pays only for what it
writes (the tables need no concurrency; a loop has no requests, and its window is not even
parsed unless marked), and a bad window fails where it is first read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_of_threads, python_threads, trace_window
from tftrace.analysis.metrics.concurrency import pool_step_function
from tftrace.analysis.metrics.intervals import StepFunction
from tftrace.analysis.metrics.python_time import stack_functions
from tftrace.analysis.metrics.requests import Requests, measure_requests
from tftrace.analysis.metrics.steps import Steps, find_steps
from tftrace.analysis.metrics.window import (
    STEADY,
    WindowArg,
    WindowSpec,
    in_recording,
    parse_window,
    resolve_window,
)
from tftrace.analysis.metrics.work import SERVER, find_work
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run


@dataclass(frozen=True, repr=False)
class TraceFigures:
    """The whole trace's figures of ``run``, and the window ``window_arg`` (with
    ``warmup_arg`` warm-up steps) that an export marks; see each attribute."""

    run: Run
    window_arg: WindowArg = STEADY
    warmup_arg: int = 1

    @cached_property
    def trace_window(self) -> tuple[int, int]:
        """(start, end) ns of the whole trace: what an export covers."""
        return trace_window(self.run)

    @cached_property
    def steps(self) -> Steps:
        """Every step of the trace (``find_steps``)."""
        return find_steps(self.run)

    @cached_property
    def spec(self) -> WindowSpec:
        """The window asked for, as the run was recorded (``in_recording``)."""
        return in_recording(parse_window(self.window_arg, self.warmup_arg), self.run)

    @cached_property
    def _resolved(self) -> tuple[tuple[int, int], str]:
        spec = self.spec  # first: a bad window fails before the steps are found
        return resolve_window(self.run, self.steps, spec)

    @property
    def window(self) -> tuple[int, int]:
        """(start, end) ns of the analysed window, as ``tftrace analyze`` resolves it."""
        return self._resolved[0]

    @property
    def window_basis(self) -> str:
        """What the window is and why, in one line (``Metrics.window_basis``)."""
        return self._resolved[1]

    @property
    def warmup_steps(self) -> int:
        """Steps of the warm-up in the trace (fewer than asked where the recording began
        after some)."""
        return self.spec.warmup_steps

    @cached_property
    def requests(self) -> Requests | None:
        """A server's requests of the window (``Metrics.requests``); None for a loop, whose
        window is then left unresolved."""
        work = find_work(self.run)
        return measure_requests(self.run, work, self.window) if work.shape == SERVER else None

    @cached_property
    def python_threads(self) -> np.ndarray:
        """Keys of the Python threads (``busy.python_threads``)."""
        return python_threads(self.run)

    @cached_property
    def python_stacks(self) -> pd.DataFrame:
        """py-spy's intervals (``run.python``) of every thread but tftrace's own."""
        python = self.run.python
        pools = pool_of_threads(self.run, python["thread"].to_numpy())
        return python[np.asarray(pools != Pool.PROFILER.value)]

    @cached_property
    def stack_functions(self) -> Mapping[str, list[str]]:
        """Each stack of ``python_stacks``: its functions as the Python-time metric names
        them, outermost first, the launcher's frames dropped (``stack_functions``)."""
        return {str(s): stack_functions(str(s)) for s in self.python_stacks["stack"].unique()}

    def busy_threads(self, pool: Pool) -> StepFunction:
        """The number of the pool's threads busy over the whole trace (``concurrency.py``)."""
        return pool_step_function(self.run, pool, self.trace_window)[0]


def trace_figures(run: Run, window: WindowArg = STEADY, warmup_steps: int = 1) -> TraceFigures:
    """The figures of ``run`` an export converts, with the window it marks (as ``measure``
    takes it: ``steady``, ``all``, ``A:B``, ``T0:T1``)."""
    return TraceFigures(run, window, warmup_steps)
