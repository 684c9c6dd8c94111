"""Steps: the repeated unit of work on the main thread, and the breakdown of each.

Found, in order of preference by how much of the trace they cover:
- calls of one tf.function from the main thread (``__inference_<name>_<id>``; Keras'
  ``train_function`` is one, Keras 3's ``multi_step_on_iterator`` another);
- a user annotation repeated on the main thread (``tf.profiler.experimental.Trace``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.breakdown import CATEGORIES, breakdown, indicators
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import INFERENCE_FUNCTION_PREFIX


@dataclass(frozen=True)
class Steps:
    source: str  # "tf.function <name>", "annotation <name>", or "none"
    table: pd.DataFrame  # step, start_ns, end_ns, duration_ns, then one share per category

    def stats(self) -> dict[str, float]:
        d = self.table["duration_ns"].to_numpy() / 1e6
        if len(d) == 0:
            return {"steps": 0}
        return {
            "steps": len(d),
            "mean_ms": float(d.mean()),
            "std_ms": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
            "cv": float(d.std(ddof=1) / d.mean()) if len(d) > 1 and d.mean() > 0 else 0.0,
            "min_ms": float(d.min()),
            "max_ms": float(d.max()),
        }


def _main_thread(run: Run) -> int | None:
    main = run.threads.loc[run.threads["pool"] == Pool.PYTHON_MAIN.value, "thread"]
    return int(main.iloc[0]) if len(main) else None


def _top_level(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of intervals not inside an earlier one (calls nested in calls are one step)."""
    order = np.argsort(start, kind="stable")
    reach = np.maximum.accumulate(end[order])
    keep_sorted = np.r_[True, start[order][1:] >= reach[:-1]]
    keep = np.zeros(len(start), dtype=bool)
    keep[order] = keep_sorted
    return keep


def _candidates(run: Run, main: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    ops = op_events(run)
    calls = ops[
        (ops["thread"] == main)
        & ops["op_type"].astype(str).str.startswith(INFERENCE_FUNCTION_PREFIX)
    ]
    for name, group in calls.groupby(calls["op_type"].astype(str).str.rsplit("_", n=1).str[0]):
        out.append(
            (
                f"tf.function {name[len(INFERENCE_FUNCTION_PREFIX) :]}",
                group["start_ns"].to_numpy(),
                group["end_ns"].to_numpy(),
            )
        )
    ev = run.events
    notes = ev[(ev["thread"] == main) & (ev["kind"] == EventKind.ANNOTATION.value)]
    for name, group in notes.groupby(notes["name"].astype(str)):
        out.append((f"annotation {name}", group["start_ns"].to_numpy(), group["end_ns"].to_numpy()))
    return out


# A loop's steps cover most of what was traced; a name repeated now and then (TF's own
# "convert_to_tensor" annotations) is not a step.
MIN_COVER = 0.3


def find_steps(run: Run) -> Steps:
    main = _main_thread(run)
    lo, hi = trace_window(run)
    best: tuple[str, np.ndarray, np.ndarray] | None = None
    best_cover = 0
    for source, start, end in _candidates(run, main) if main is not None else []:
        keep = _top_level(start, end)
        start, end = start[keep], end[keep]
        cover = int((end - start).sum())
        if len(start) >= 2 and cover > best_cover and cover >= MIN_COVER * (hi - lo):
            best, best_cover = (source, start, end), cover
    if best is None:
        return Steps(
            "none", pd.DataFrame(columns=["step", "start_ns", "end_ns", "duration_ns", *CATEGORIES])
        )
    source, start, end = best
    order = np.argsort(start)
    start, end = start[order], end[order]
    signals = indicators(run)
    shares = [
        breakdown(run, (int(s), int(e)), signals)["share"].to_numpy()
        for s, e in zip(start, end, strict=True)
    ]
    table = pd.DataFrame(
        {
            "step": np.arange(len(start)),
            "start_ns": start,
            "end_ns": end,
            "duration_ns": end - start,
        }
    )
    table[list(CATEGORIES)] = np.array(shares)
    return Steps(source, table)
