"""An input pipeline whose work is TF ops: what each setting does to the steps that wait for it.

A ``tf.data`` map's function runs on tf.data's own threads, and its ops split over the
intra-op pool as a step's do. The steps' replay keeps the main thread's wait for the next
element (``IteratorGetNext``) as recorded, so it cannot see that: a map of three 500x500
products, one element at a time, recorded at intra-op 2 on 2 cores, was predicted 1.00x at
intra-op 1 and ran 0.64x (its products inline, on one core).

The trace holds the pipeline as it holds the inter-op pool: the function's executor runs its
ops in closures on tf.data's threads, each joined to the Record that scheduled it. An
element is a closure scheduled from outside them (by the iterator's runner) and every
closure it scheduled, down the tree. The producers are replayed by themselves, over a
stretch of consecutive steps, on each setting: the elements in their recorded order on the
recorded number of tf.data threads, as many at once as the recording made (its mean number
in flight while any was), the next one started as soon as one of those ends (a pipeline the
steps wait for has no element left unasked for).

Where the steps are input-bound (the main thread waited for its input at least
``INPUT_BOUND`` of their time), they go at the producers' pace: the setting's wait is the
recorded wait plus the recorded step time times (the producers' replayed time at the
setting over theirs at the recorded one, less one), never below no wait, where the
consumer's own work binds. A pipeline the steps do not wait for is left as recorded: how
much slack its producers had is not in the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_thread_keys
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.predict.background import Background
from tftrace.analysis.predict.items import INPUT, WORK, thread_items
from tftrace.analysis.predict.replays import Replays
from tftrace.analysis.predict.step_work import (
    JOIN,
    SPAWN,
    WAITS,
    Segment,
    StepWork,
    Unit,
    closure_work,
    descendants,
)

# The share of the replayed steps' time the main thread waited for its input, at least, for
# the steps to go at the producers' pace.
INPUT_BOUND = 0.5


@dataclass(frozen=True)
class Pipeline:
    """The producers over a stretch of steps: ``work`` (units[0] the runner that starts the
    elements, then their closures), the share of a core an op's own thread works at beside
    its shards (``caller``) and what else held the cores (``held``: ``items.Items``), the
    tf.data ``threads`` that ran them, the elements made at once (``in_flight``), how many
    elements, and the stretch's recorded span and the main thread's wait for input in it
    (ns)."""

    work: StepWork
    caller: float
    held: Background
    threads: int
    in_flight: int
    elements: int
    steps_ns: float
    input_ns: float

    @property
    def bound(self) -> bool:
        """Whether the steps waited for their input at least ``INPUT_BOUND`` of their time."""
        return self.steps_ns > 0 and self.input_ns >= INPUT_BOUND * self.steps_ns


def pipeline(run: Run, steps: pd.DataFrame, main: int, cores: float) -> Pipeline | None:
    """The producers over ``steps`` (consecutive rows of a ``Steps`` table); None where no
    tf.data closure in them ran an op."""
    lo, hi = int(steps["start_ns"].min()), int(steps["end_ns"].max())
    regions = run.regions
    started = regions["start_ns"].between(lo, hi, inclusive="left")
    if not (started & regions["thread"].isin(pool_thread_keys(run, Pool.TF_DATA))).any():
        return None  # most loops: no tf.data closure, and no items to work out
    items = thread_items(run, lo, hi, main, cores, pool=Pool.TF_DATA)
    closures = items.closures
    ops = items.items[items.items["what"] == WORK]
    if closures.empty or not ops["thread"].isin(closures["thread"]).any():
        return None
    units = closure_work(items, lo)
    roots = sorted((u.release_ns, k) for k, u in enumerate(units) if k and u.release_ns is not None)
    children = {
        k: [c for seg in u.segments if seg.kind == SPAWN for c in seg.units]
        for k, u in enumerate(units)
    }
    tree = [(k, descendants([k], children)) for _, k in roots]
    # unit k is closure row k - 1 (units[0]: the main unit the runner replaces)
    starts, ends = closures["start_ns"].to_numpy(), closures["end_ns"].to_numpy()
    spans = [(starts[[d - 1 for d in ds]].min(), ends[[d - 1 for d in ds]].max()) for _, ds in tree]
    n = in_flight(np.array([a for a, _ in spans]), np.array([b for _, b in spans]))
    rooted = {k for _, k in roots}
    runner = Unit(-1, True, runner_segments(tree, n))
    work = (
        runner,
        *(replace(u, release_ns=None) if k in rooted else u for k, u in enumerate(units) if k),
    )
    mine = items.items[(items.items["thread"] == main) & (items.items["what"] == INPUT)]
    waited = np.clip(mine["end_ns"], lo, hi) - np.clip(mine["start_ns"], lo, hi)
    return Pipeline(
        StepWork(0, hi - lo, work),
        items.caller_share,
        items.background,
        int(closures["thread"].nunique()),
        n,
        len(tree),
        float(hi - lo),
        float(waited.sum()),
    )


def in_flight(starts: np.ndarray, ends: np.ndarray) -> int:
    """The elements made at once: their mean number in flight while any was, at least 1."""
    times = np.r_[starts, ends]
    steps = np.r_[np.ones(len(starts)), -np.ones(len(ends))]
    order = np.lexsort((steps, times))  # an end before a start at the same time
    level = np.cumsum(steps[order])[:-1]
    widths = np.diff(times[order]).astype(np.float64)
    busy = float(widths[level > 0].sum())
    return max(1, round(float((widths * level).sum()) / busy)) if busy > 0 else 1


def runner_segments(elements: list[tuple[int, tuple[int, ...]]], n: int) -> tuple[Segment, ...]:
    """The runner's part: start the first ``n`` elements (root, its closures), then each next
    one when the element ``n`` before it has ended, then wait for the last."""
    out: list[Segment] = []
    for j, (root, _) in enumerate(elements):
        if j >= n:
            out.append(Segment(JOIN, units=elements[j - n][1]))
        out.append(Segment(SPAWN, units=(root,)))
    rest = tuple(sorted({k for _, ks in elements[-n:] for k in ks}))
    return (*out, Segment(JOIN, units=rest)) if rest else tuple(out)


def input_wait(works: tuple[StepWork, ...]) -> float:
    """The replayed steps' main thread's wait for input (ns, as the replay keeps it)."""
    return sum(
        seg.ns
        for w in works
        for u in w.units
        if u.main
        for seg in u.segments
        if seg.kind == WAITS and seg.why == INPUT
    )


class InputPace:
    """What a setting adds to the replayed steps' time (ns, below 0: takes off) through the
    wait for input (module doc): ``recorded_ns`` the replayed steps' recorded time,
    ``input_ns`` their wait for input."""

    def __init__(
        self, pipe: Pipeline, cores: float, rec_intra: int, recorded_ns: float, input_ns: float
    ):
        self.pipe, self.rec_intra = pipe, rec_intra
        self.recorded_ns, self.input_ns = recorded_ns, input_ns
        self.replays = Replays((pipe.work,), cores, rec_intra, pipe.caller, None, pipe.held)

    def producers_ns(self, intra: int, more_cores: int = 1) -> float:
        """The producers' replayed time at ``intra`` Eigen workers."""
        return self.replays.span(intra, self.pipe.threads, more_cores)

    def __call__(self, intra: int, more_cores: int = 1) -> float:
        if not self.pipe.bound:
            return 0.0
        base = self.producers_ns(self.rec_intra)
        if base <= 0:
            return 0.0
        here = self.producers_ns(intra, more_cores)
        return max(self.recorded_ns * (here / base - 1.0), -self.input_ns)


def pipeline_note(pipe: Pipeline) -> str:
    """What the prediction did with the input pipeline, in words."""
    share = min(pipe.input_ns / pipe.steps_ns, 1.0) if pipe.steps_ns > 0 else 0.0
    made = (
        f"a tf.data pipeline ran its ops on {pipe.threads} thread{'s' * (pipe.threads != 1)}, "
        f"{pipe.in_flight} element{'s' * (pipe.in_flight != 1)} at a time, and the steps "
        f"waited for it {share:.0%} of their time"
    )
    if pipe.bound:
        return (
            f"{made}: its producers ({pipe.elements} elements of a stretch of the window) were "
            "replayed on each setting, and the steps wait for them at its pace (docs/predict.md)"
        )
    return f"{made}: too little to go at its pace; that wait is kept as recorded"
