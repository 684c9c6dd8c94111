"""Rules on what the workload itself does: time in Python under the GIL, an input pipeline that
starves the step. No thread setting fixes these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.findings.evidence import category_share, pool_row, severity_for
from tftrace.analysis.findings.finding import Finding
from tftrace.analysis.metrics.intervals import clip
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.analysis.model.vocabulary import ITERATOR_GET_NEXT, PY_FUNCTION_OPS

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis


# Rule 5 -----------------------------------------------------------------------------------
PYTHON_SHARE = 0.4


def python_bound(run: Run, analysis: Analysis) -> list[Finding]:
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


def input_pipeline(run: Run, analysis: Analysis) -> list[Finding]:
    ev = run.events
    main = run.threads.loc[run.threads["pool"] == Pool.PYTHON_MAIN.value, "thread"]
    names = ev["name"].astype(str)
    lo, hi = analysis.window
    get_next = ev[ev["thread"].isin(main) & names.str.startswith(ITERATOR_GET_NEXT)]
    s, e = clip(get_next["start_ns"].to_numpy(), get_next["end_ns"].to_numpy(), lo, hi)
    waiting = float((e - s).sum()) / max(hi - lo, 1)  # the waits inside the window
    if waiting < STARVING_SHARE:
        return []
    data = pool_row(analysis, Pool.TF_DATA)
    data_mean = float(data["mean"]) if data is not None else 0.0
    cores = run.manifest.usable_cpus or 1
    sequential = data_mean <= 1.1 and cores > 1
    return [
        Finding(
            "input-pipeline-starves-step",
            severity_for(waiting),
            Pool.TF_DATA.value,
            f"The step waited for input {waiting:.0%} of the time; the tf.data pool kept "
            f"{data_mean:.2f} threads busy on average"
            + (" (its map runs one element at a time)." if sequential else "."),
            (
                "Set num_parallel_calls=tf.data.AUTOTUNE on map/interleave and add .prefetch(); "
                if sequential
                else "Make the input pipeline cheaper or add .prefetch(); "
            )
            + "cache or precompute what does not change between epochs.",
            {
                "waiting_for_input_share": round(waiting, 4),
                "tf_data_mean_busy": round(data_mean, 3),
                "cores": cores,
            },
        )
    ]
