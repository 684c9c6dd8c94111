"""Rules on what the workload itself does: time in Python under the GIL, an input pipeline that
starves the step. No thread setting fixes these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.findings.evidence import (
    category_share,
    function_runs_in_flight,
    parallelism_while_busy,
    pool_row,
    severity_for,
)
from tftrace.analysis.findings.finding import Finding
from tftrace.analysis.metrics.busy import pool_thread_keys
from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.model.categories import starts_with
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import ITERATOR_GET_NEXT, PY_FUNCTION_OPS

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics


# Rule 5 -----------------------------------------------------------------------------------
PYTHON_SHARE = 0.4


def python_bound(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: time spent in Python holds the GIL, so no pool size shortens it.

    Checked on the data: the breakdown's "python / host" (a py_function op running, or the main
    thread on a CPU with nothing of TF's running) is >= ``PYTHON_SHARE`` of the window.
    """
    share = category_share(analysis, "python / host")
    if share < PYTHON_SHARE:
        return []
    ops = analysis.top_ops
    py = ops[ops["op_type"].isin(PY_FUNCTION_OPS)]
    where = "tf.py_function / py_func ops" if len(py) else "Python code on the main thread"
    return [
        Finding(
            "python-bound",
            severity_for(share),
            None,
            f"{share:.0%} of the time is Python ({where}), under the GIL: no thread setting can "
            "make it faster.",
            "Move the work into TensorFlow ops (vectorise, tf.data transformations instead of "
            "py_function), or run it outside the step.",
            {"python_share": round(share, 4), "python_ops_ms": float(py["total_ms"].sum())},
        )
    ]


# Rule 6 -----------------------------------------------------------------------------------
STARVING_SHARE = 0.3  # the main thread waited in IteratorGetNext >= 30 % of the window
SEQUENTIAL_PARALLELISM = 1.3  # < 1.3 elements in flight at a time while tf.data worked


def input_pipeline(run: Run, analysis: Metrics) -> list[Finding]:
    """Premise: the step waits for its input, so the pipeline, not the step, sets the pace.

    Checked on the data: the main thread was inside ``IteratorGetNext`` (the union of those
    events, so nested fetches count once) for at least ``STARVING_SHARE`` of the window. The
    map's real parallelism is measured, not assumed: the mean number of tf.data function runs
    (one element through the map's function: an executor run on tf.data's threads, by its run
    id) in flight while at least one was; in a trace without run ids, the mean number of
    tf.data threads busy while one was (one element's independent ops on two threads then count
    twice). Below ``SEQUENTIAL_PARALLELISM`` on more than one core the map runs one element
    at a time, whatever num_parallel_calls says; above it the pipeline already runs in
    parallel and its own cost is the limit.
    """
    ev = run.events
    main = pool_thread_keys(run, Pool.PYTHON_MAIN)
    lo, hi = analysis.window
    get_next = ev[ev["thread"].isin(main) & starts_with(ev["name"], ITERATOR_GET_NEXT)]
    s, e = union(*clip(get_next["start_ns"].to_numpy(), get_next["end_ns"].to_numpy(), lo, hi))
    waiting = float((e - s).sum()) / max(hi - lo, 1)  # the waits inside the window
    if waiting < STARVING_SHARE:
        return []
    data = pool_row(analysis, Pool.TF_DATA)
    data_mean = float(data["mean"]) if data is not None else 0.0
    at_a_time = function_runs_in_flight(run, Pool.TF_DATA, (lo, hi))
    unit, source = "elements", "function runs in flight"
    if at_a_time is None:  # no executor run ids: the pool's busy threads instead
        at_a_time = parallelism_while_busy(analysis, Pool.TF_DATA)
        unit, source = "threads", "busy threads"
    cores = run.manifest.usable_cpus or 1
    sequential = at_a_time is not None and at_a_time < SEQUENTIAL_PARALLELISM and cores > 1
    if at_a_time is None:
        measured = " and ran no traced work."
    else:
        how = "its map runs one element at a time" if sequential else "its map runs in parallel"
        measured = f", {at_a_time:.2f} {unit} at a time while it worked ({how})."
    return [
        Finding(
            "input-pipeline-starves-step",
            severity_for(waiting),
            Pool.TF_DATA.value,
            f"The step waited for input {waiting:.0%} of the time; the tf.data pool kept "
            f"{data_mean:.2f} threads busy on average" + measured,
            (
                "Set num_parallel_calls=tf.data.AUTOTUNE on map/interleave and add .prefetch(); "
                if sequential
                else "Make the input pipeline cheaper or add .prefetch(); "
            )
            + "cache or precompute what does not change between epochs.",
            {
                "waiting_for_input_share": round(waiting, 4),
                "tf_data_mean_busy": round(data_mean, 3),
                "tf_data_parallelism": None if at_a_time is None else round(at_a_time, 3),
                "parallelism_from": source,
                "cores": cores,
            },
        )
    ]
