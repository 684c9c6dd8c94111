"""Intermediates computed once per run: ``@per_run`` on a function of (run, hashable args).

One ``analyze`` asks many metrics and rules for the same things (the trace's window, the op
events, each thread's busy intervals, the breakdown's indicators); computed once and shared,
they cost one pass over the events instead of one per caller. The values live on the ``Run``
(``Run.memo``), so they go when it goes, and a new ``Run`` (``with_trace_facts`` gives one)
starts empty. Shared values are read-only by convention: copy before changing one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from tftrace.analysis.model.run import Run

P = ParamSpec("P")
R = TypeVar("R")


def per_run(fn: Callable[Concatenate[Run, P], R]) -> Callable[Concatenate[Run, P], R]:
    """``fn(run, *args)`` computed once per run and positional ``args``."""

    @functools.wraps(fn)
    def once(run: Run, *args: P.args, **kwargs: P.kwargs) -> R:
        if kwargs:  # keyword calls are rare and not worth a second key form
            return fn(run, *args, **kwargs)
        key: Hashable = (fn.__module__, fn.__qualname__, *args)
        if key not in run.memo:
            run.memo[key] = fn(run, *args, **kwargs)
        value: R = run.memo[key]
        return value

    return once
