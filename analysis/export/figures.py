"""What an export reads: the whole trace's figures, computed by ``analysis/metrics``.

An export converts figures, it measures nothing, so it does not import ``analysis/metrics``
(``tests/layout/test_render_layers.py``). These protocols say which attributes it reads of
``metrics.trace_figures.TraceFigures`` (built by ``trace_figures(run, window, warmup_steps)``)
and of the metrics objects it hands over; any object with them will do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np
import pandas as pd

from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run


class Steps(Protocol):
    """The steps of the trace (``metrics/steps.Steps``): one row each, ``schema.STEPS``."""

    @property
    def table(self) -> pd.DataFrame: ...


class StepFunction(Protocol):
    """c(t) = values[i] for times[i] <= t < times[i + 1] (``metrics/intervals.StepFunction``)."""

    @property
    def times(self) -> np.ndarray: ...

    @property
    def values(self) -> np.ndarray: ...


class Requests(Protocol):
    """A server's requests of the window (``metrics/requests.Requests``): ``table`` holds one
    row each, with the share of its latency in each of ``categories``."""

    @property
    def table(self) -> pd.DataFrame: ...

    @property
    def window(self) -> tuple[int, int]: ...

    @property
    def seconds(self) -> float: ...

    @property
    def categories(self) -> tuple[str, ...]: ...


class TraceFigures(Protocol):
    """The figures of a whole trace that an export converts; see
    ``metrics.trace_figures.TraceFigures`` for what each is."""

    @property
    def run(self) -> Run: ...

    @property
    def trace_window(self) -> tuple[int, int]: ...

    @property
    def steps(self) -> Steps: ...

    @property
    def window(self) -> tuple[int, int]: ...

    @property
    def window_basis(self) -> str: ...

    @property
    def warmup_steps(self) -> int: ...

    @property
    def requests(self) -> Requests | None: ...

    @property
    def python_threads(self) -> np.ndarray: ...

    @property
    def python_stacks(self) -> pd.DataFrame: ...

    @property
    def stack_functions(self) -> Mapping[str, list[str]]: ...

    def busy_threads(self, pool: Pool) -> StepFunction: ...
