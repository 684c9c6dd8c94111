"""Units of work on every Python thread, and the shape of the workload they make.

A unit of work is an outermost call into TensorFlow that a program makes as a whole, on
whichever Python thread makes it:

- a ``tf.function`` call (a SavedModel signature, a Keras ``predict``/``fit`` step are
  tf.function calls too): TF's annotation with the function's name around the call (tracing
  included), else its ``EagerLocalExecute: __inference_<name>_<id>`` event;
- a step marker the user wrote: a ``tf.profiler.experimental.Trace(name, step_num=N)`` block.

Calls nested in a unit of the same thread are part of it. The shape of the workload:

- ``server``: units on two or more threads, each making at least ``MIN_CALLS`` of them, with
  calls of different threads in flight together;
- ``loop``: otherwise, where units exist (one thread steps; ``steps.py`` finds its steps);
- ``none``: no unit of work at all.

A user's step markers always win: when they exist, they are the units (``marked``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import python_threads
from tftrace.analysis.metrics.intervals import StepFunction, concurrency
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.memo import per_run
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import (
    EAGER_EXECUTE_ANNOTATION_PREFIX,
    EAGER_OP_PREFIX,
    INFERENCE_FUNCTION_PREFIX,
)

LOOP, SERVER, NONE = "loop", "server", "none"
UNIT_COLUMNS = ("thread", "name", "start_ns", "end_ns")
# A thread that makes fewer calls than this is not one of a server's request threads (a
# helper thread that runs one function now and then); the same count as a loop's steps.
MIN_CALLS = 5


@dataclass(frozen=True)
class Work:
    """The units of work of a whole trace (``units``: one row each, ``UNIT_COLUMNS``, by start),
    the workload's ``shape`` (loop, server, none), whether the units are the user's own step
    markers (``marked``) and what they are in words (``source``: ``"tf.function serve"``,
    ``"Trace(train, step_num=...)"``)."""

    units: pd.DataFrame
    shape: str
    marked: bool
    source: str

    @property
    def threads(self) -> int:
        return int(self.units["thread"].nunique())

    def warmup_end(self, calls: int = 1) -> int | None:
        """When the warm-up ends: the latest end of each function's first ``calls`` calls
        (the first traces and builds), on whichever thread made them. A function called no
        more than ``calls`` times (a set-up, a final export) has only warm-up calls and does
        not move the end (the sweep's timing agrees, ``sweep/timing.py``); None when no
        function is called more often."""
        counts = self.units["name"].value_counts()
        serving = self.units[self.units["name"].isin(counts.index[counts > calls])]
        if serving.empty:
            return None
        firsts = serving.sort_values("start_ns").groupby("name", observed=True).head(calls)
        return int(firsts["end_ns"].max())


def _top_level(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of intervals not inside an earlier one of the same thread."""
    order = np.lexsort((-end, start, thread))
    keep = np.zeros(len(start), dtype=bool)
    t, s, e = thread[order], start[order], end[order]
    for th in np.unique(t):
        rows = np.flatnonzero(t == th)
        reach = np.maximum.accumulate(e[rows])
        keep[order[rows]] = np.r_[True, s[rows][1:] >= reach[:-1]]
    return keep


def _frame(
    thread: np.ndarray, name: np.ndarray, start: np.ndarray, end: np.ndarray
) -> pd.DataFrame:
    keep = _top_level(thread, start, end)
    df = pd.DataFrame(
        {
            "thread": thread[keep].astype(np.int32),
            "name": pd.Categorical(name[keep].astype(str)),
            "start_ns": start[keep].astype(np.int64),
            "end_ns": end[keep].astype(np.int64),
        }
    )
    return df.sort_values(["start_ns", "thread"], kind="stable").reset_index(drop=True)


def _marked(run: Run, python: np.ndarray) -> pd.DataFrame | None:
    """The user's Trace(name, step_num=) blocks on Python threads, the most frequent name."""
    ev = run.events
    marks = ev[ev["step_num"].notna().to_numpy() & np.isin(ev["thread"].to_numpy(), python)]
    marks = marks[marks["kind"] == EventKind.ANNOTATION.value]
    if marks.empty:
        return None
    name = str(marks["name"].astype(str).value_counts().index[0])
    marks = marks[marks["name"] == name]
    n = len(marks)
    return _frame(
        marks["thread"].to_numpy(),
        np.full(n, name, dtype=object),
        marks["start_ns"].to_numpy(),
        marks["end_ns"].to_numpy(),
    )


def _calls(run: Run, python: np.ndarray) -> pd.DataFrame:
    """tf.function calls on Python threads: TF's annotation named after the function where
    it exists (it covers tracing), and the function's eager execution event."""
    ev = run.events
    on_python = np.isin(ev["thread"].to_numpy(), python)
    names = ev["name"].cat.categories.astype(str)
    # "EagerLocalExecute: __inference_serve_47" -> "serve"; once per distinct name
    prefix = EAGER_OP_PREFIX + INFERENCE_FUNCTION_PREFIX
    stem = np.array(
        [n[len(prefix) :].rsplit("_", 1)[0] if n.startswith(prefix) else "" for n in names],
        dtype=object,
    )
    codes = ev["name"].cat.codes.to_numpy()
    function_of = stem[codes]
    is_call = on_python & (function_of != "")
    functions = {f for f in stem if f}
    # TF's own annotation of a call bears the function's name
    is_note = (
        on_python
        & (ev["kind"] == EventKind.ANNOTATION.value).to_numpy()
        & np.isin(codes, [i for i, n in enumerate(names) if n in functions])
        & ~np.isin(
            codes, [i for i, n in enumerate(names) if n.startswith(EAGER_EXECUTE_ANNOTATION_PREFIX)]
        )
    )
    label = np.where(is_note, names.to_numpy()[codes].astype(object), function_of)
    rows = is_call | is_note
    return _frame(
        ev["thread"].to_numpy()[rows],
        label[rows],
        ev["start_ns"].to_numpy()[rows],
        ev["end_ns"].to_numpy()[rows],
    )


def in_flight(units: pd.DataFrame) -> StepFunction:
    """How many threads have a unit in flight at each moment, from the first start to the
    last end: each thread's units merged first (``intervals.concurrency``), so a thread's own
    nested rows count once, and a call that starts as another thread's ends does not overlap
    it. Units of one thread never overlap, so this is also the units in flight."""
    if units.empty:
        return StepFunction(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    by_thread = units.groupby("thread", sort=False)
    starts = [g["start_ns"].to_numpy(dtype=np.int64) for _, g in by_thread]
    ends = [g["end_ns"].to_numpy(dtype=np.int64) for _, g in by_thread]
    lo, hi = int(units["start_ns"].min()), int(units["end_ns"].max())
    return concurrency(starts, ends, lo, hi)


def is_server(units: pd.DataFrame) -> bool:
    """Two or more threads that each make at least ``MIN_CALLS`` calls, with calls of
    different threads in flight together (the sweep's timing tells a server the same way)."""
    if units.empty:
        return False
    calls = units["thread"].value_counts()
    busy = calls.index[calls >= MIN_CALLS]
    return len(busy) >= 2 and int(in_flight(units[units["thread"].isin(busy)]).values.max()) >= 2


def _shape(units: pd.DataFrame) -> str:
    if units.empty:
        return NONE
    return SERVER if is_server(units) else LOOP


@per_run
def find_work(run: Run) -> Work:
    """The units of work of the whole trace and the shape they make (see the module doc)."""
    python = python_threads(run)
    if run.events.empty or len(python) == 0:
        return Work(pd.DataFrame(columns=list(UNIT_COLUMNS)), NONE, False, "none")
    marked = _marked(run, python)
    if marked is not None:
        name = str(marked["name"].iloc[0])
        return Work(marked, _shape(marked), True, f"Trace({name}, step_num=...)")
    units = _calls(run, python)
    named = units["name"].astype(str).value_counts()
    source = "tf.function " + ", ".join(named.index[:3]) + (" ..." if len(named) > 3 else "")
    return Work(units, _shape(units), False, source if len(named) else "none")
