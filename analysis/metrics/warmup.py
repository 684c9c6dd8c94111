"""The warm-up: the first step(s), where a tf.function traces, is built and first runs.

It is left out of the steady window (``window.py``) and reported on its own: its span and what
the main thread did in it, each instant in the first category that holds (they add up to 1):

1. ``variable initialisation``: an eager variable op (``VarHandleOp``, ``AssignVariableOp``,
   the random initialisers, ...) or TF's ``initialize_variables`` function runs on the main
   thread (variables created on the first call, lifted out of the graph);
2. ``tracing (graph building)``: inside TF's ``tf.function-graph_building`` event, Python
   running the function to build its graph (Keras builds the model here);
3. ``first run``: the traced function runs (``KernelAndDeviceFunc::Run``);
4. ``instantiation & graph optimisation``: the rest of the function's call
   (``EagerLocalExecute: __inference_...``): TF instantiates the graph and Grappler optimises
   it, writing no events of its own;
5. ``other``: the rest (Python around the calls, eager ops, input).

``before_ns`` is the trace before the first step (imports, building the model, ...), in
neither the warm-up nor the steady window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_thread_keys, trace_window
from tftrace.analysis.metrics.intervals import first_match_ns
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.metrics.steps import Steps
from tftrace.analysis.model.categories import equals, is_in, starts_with
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import (
    FUNCTION_RUN_EVENT,
    GRAPH_BUILDING_EVENT,
    INFERENCE_FUNCTION_PREFIX,
    VARIABLE_INIT_FUNCTION,
    VARIABLE_INIT_OPS,
)

WARMUP_CATEGORIES = (
    "variable initialisation",
    "tracing (graph building)",
    "first run",
    "instantiation & graph optimisation",
    "other",
)


@dataclass(frozen=True)
class Warmup:
    """The first ``steps`` steps: ``span`` (start, end ns), ``before_ns`` (trace time before
    them) and ``breakdown`` (category, ns, share of the span; ``WARMUP_CATEGORIES``)."""

    span: tuple[int, int]
    steps: int
    before_ns: int
    breakdown: pd.DataFrame

    @property
    def seconds(self) -> float:
        return (self.span[1] - self.span[0]) / 1e9

    def to_json(self) -> dict[str, Any]:
        return {
            "start_ns": self.span[0],
            "end_ns": self.span[1],
            "seconds": self.seconds,
            "steps": self.steps,
            "before_s": self.before_ns / 1e9,
            "breakdown": [
                {"category": r.category, "ns": int(r.ns), "share": float(r.share)}
                for r in self.breakdown.itertuples()
            ],
        }


def _spans(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return frame["start_ns"].to_numpy(), frame["end_ns"].to_numpy()


def measure_warmup(run: Run, steps: Steps, warmup_steps: int = 1) -> Warmup | None:
    """The warm-up of a run from its steps (all of them: ``find_steps(run)``); None without
    steps or with ``warmup_steps`` 0."""
    table = steps.table
    count = min(warmup_steps, len(table))
    if count == 0:
        return None
    lo, hi = int(table["start_ns"].iloc[0]), int(table["end_ns"].iloc[count - 1])
    main = pool_thread_keys(run, Pool.PYTHON_MAIN)
    ev = run.events[run.events["thread"].isin(main)]
    ops = op_events(run)
    ops = ops[ops["thread"].isin(main) & ops["eager"]]
    op_type = ops["op_type"]
    sets = [
        _spans(
            ops[is_in(op_type, VARIABLE_INIT_OPS) | starts_with(op_type, VARIABLE_INIT_FUNCTION)]
        ),
        _spans(ev[equals(ev["name"], GRAPH_BUILDING_EVENT)]),
        _spans(ev[equals(ev["name"], FUNCTION_RUN_EVENT)]),
        _spans(ops[starts_with(op_type, INFERENCE_FUNCTION_PREFIX)]),
    ]
    ns = first_match_ns(sets, lo, hi)
    frame = pd.DataFrame({"category": WARMUP_CATEGORIES, "ns": ns, "share": ns / max(hi - lo, 1)})
    return Warmup((lo, hi), count, max(lo - trace_window(run)[0], 0), frame)
