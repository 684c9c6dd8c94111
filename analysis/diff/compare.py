"""``diff(a, b) -> RunDiff``: two runs of one workload compared over their steady state,
matched by steps, not by seconds.

Figures that add up over time (CPU, run-queue wait, an op type's time) are per step, so that
two windows of different lengths compare; means, peaks, percentiles and shares compare as they
are. Every figure is the ``Analysis``'s own: nothing is measured twice.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tftrace.analysis.diff.factors import compare_factors, explain, ops_differ
from tftrace.analysis.diff.manifest_diff import (
    RunsNotComparable,
    check_same_workload,
    manifest_differences,
)
from tftrace.analysis.diff.result import RunDiff
from tftrace.analysis.diff.stats import compare_steps
from tftrace.analysis.metrics.ops import top_op_types
from tftrace.analysis.model.pools import Pool

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis
    from tftrace.analysis.metrics.window import WindowArg
    from tftrace.analysis.model.run import Run

COMPARED_POOLS = (Pool.INTER_OP.value, Pool.INTRA_OP.value)
OTHER_POOLS = (Pool.TF_DATA.value,)  # shown when busy on either side
TOP_OPS = 10
_FUNCTION_ID = re.compile(r"^(__inference_.*?)_\d+$")  # the id differs between processes


def diff(
    a: Run | Analysis,
    b: Run | Analysis,
    *,
    window: WindowArg = "steady",
    warmup_steps: int = 1,
    cpus: int | None = None,
) -> RunDiff:
    """Compare two runs of one workload: what changed, per pool, and whether it is real.

    Args:
        a, b: each a ``Run`` (``tftrace.load``) or an ``Analysis`` (``tftrace.analyze``);
            a Run is analysed here with ``window``, ``warmup_steps`` and ``cpus`` (default:
            the steady state, after one warm-up step). A is the baseline: a speedup above 1
            means B is faster.

    Returns:
        A ``RunDiff``: step time with a verdict from the per-step samples (a two-sided
        Mann-Whitney U test and a bootstrap interval of the speedup), the pools, the wall-time
        breakdown, the op types that changed most, findings that appeared or went away and the
        manifest differences that can explain it. ``print()`` it, or read its DataFrames.

    Raises:
        RunsNotComparable (a ``TftraceError``): different workloads (script or module; the
        arguments may differ), a run without a trace, or one without steps to match.

    Example::

        d = tftrace.diff(tftrace.load("runs/inter1"), tftrace.load("runs/inter2"))
        d.step_time.verdict, d.step_time.speedup  # "faster", 1.9
        d.pools.query("figure == 'mean concurrency'")
    """
    from tftrace.analysis.analyze import Analysis, analyze

    run_a = a.run if isinstance(a, Analysis) else a
    run_b = b.run if isinstance(b, Analysis) else b
    names = (f"A ({run_a.path})", f"B ({run_b.path})")
    check_same_workload(run_a.manifest, run_b.manifest, *names)
    for run, name in zip((run_a, run_b), names, strict=True):
        if run.xplane is None or run.events.empty:
            lacks = "; ".join(run.missing) or "no events"
            raise RunsNotComparable(f"{name} has no trace to compare ({lacks})")
    options: dict[str, Any] = {"window": window, "warmup_steps": warmup_steps, "cpus": cpus}
    analysis_a = a if isinstance(a, Analysis) else analyze(a, **options)
    analysis_b = b if isinstance(b, Analysis) else analyze(b, **options)
    for analysis, name in zip((analysis_a, analysis_b), names, strict=True):
        if analysis.steps.table.empty:
            raise RunsNotComparable(
                f"{name} has no steps in its window to match ({analysis.window_basis}): a "
                "diff matches steps (tf.function calls or annotations repeated on the main "
                "thread)"
            )
    return compare(analysis_a, analysis_b)


def compare(a: Analysis, b: Analysis) -> RunDiff:
    """The ``RunDiff`` of two analyses that both have steps."""
    manifest = manifest_differences(a.run.manifest, b.run.manifest)
    factors = compare_factors(a, b)
    counts = [op_types(x)["count"] / _steps(x) for x in (a, b)]
    step_time = explain(
        compare_steps(step_ms(a), step_ms(b)), factors, manifest, ops_differ(*counts)
    )
    return RunDiff(
        a=a,
        b=b,
        step_time=step_time,
        factors=factors,
        pools=pools_diff(a, b),
        breakdown=breakdown_diff(a, b),
        ops=ops_diff(a, b),
        findings=findings_diff(a, b),
        manifest=manifest,
        notes=tuple(notes(a, b)),
    )


def step_ms(analysis: Analysis) -> np.ndarray:
    """The step times (ms) of the analysed window, one per step."""
    return analysis.steps.table["duration_ns"].to_numpy(dtype=np.float64) / 1e6


def _steps(analysis: Analysis) -> int:
    return max(len(analysis.steps.table), 1)


def _pool_figures(analysis: Analysis, pool: str) -> dict[str, float]:
    """The compared figures of one pool, from the Analysis' tables (NaN where absent)."""
    nan = float("nan")

    def row(df: pd.DataFrame) -> Any:
        hit = df[df["pool"] == pool]
        return hit.iloc[0] if len(hit) else None

    p, q, c = row(analysis.pools), row(analysis.queue_delay), row(analysis.cpu)
    per_step = 1e3 / _steps(analysis)  # s in the window -> ms per step
    return {
        "threads": float(p["threads"]) if p is not None else nan,
        "mean concurrency": float(p["mean"]) if p is not None else nan,
        "peak concurrency": float(p["peak"]) if p is not None else nan,
        "queue delay p50 (us)": float(q["p50_us"]) if q is not None else nan,
        "queue delay p99 (us)": float(q["p99_us"]) if q is not None else nan,
        "CPU (ms/step)": float(c["cpu_s"]) * per_step if c is not None else nan,
        "run-queue wait (ms/step)": float(c["wait_s"]) * per_step if c is not None else nan,
    }


POOL_FIGURES = (
    "threads",
    "mean concurrency",
    "peak concurrency",
    "queue delay p50 (us)",
    "queue delay p99 (us)",
    "CPU (ms/step)",
    "run-queue wait (ms/step)",
)


def _busy(analysis: Analysis, pool: str) -> bool:
    hit = analysis.pools[analysis.pools["pool"] == pool]
    return bool(len(hit)) and float(hit["mean"].iloc[0]) > 0


def pools_diff(a: Analysis, b: Analysis) -> pd.DataFrame:
    """One row per pool and figure: pool, figure, a, b, change (b - a)."""
    pools = [*COMPARED_POOLS, *(p for p in OTHER_POOLS if _busy(a, p) or _busy(b, p))]
    rows = []
    for pool in pools:
        fa, fb = _pool_figures(a, pool), _pool_figures(b, pool)
        rows += [(pool, figure, fa[figure], fb[figure]) for figure in POOL_FIGURES]
    df = pd.DataFrame(rows, columns=["pool", "figure", "a", "b"])
    df["change"] = df["b"] - df["a"]
    return df


def breakdown_diff(a: Analysis, b: Analysis) -> pd.DataFrame:
    """The wall-time breakdown side by side: category, a_share, b_share, a_ms_per_step,
    b_ms_per_step, change_ms_per_step."""
    sa = a.breakdown.set_index("category")
    sb = b.breakdown.set_index("category")
    categories = list(dict.fromkeys([*sa.index, *sb.index]))
    sa, sb = sa.reindex(categories), sb.reindex(categories)
    df = pd.DataFrame(
        {
            "category": categories,
            "a_share": sa["share"].to_numpy(dtype=float),
            "b_share": sb["share"].to_numpy(dtype=float),
            "a_ms_per_step": sa["ns"].to_numpy(dtype=float) / 1e6 / _steps(a),
            "b_ms_per_step": sb["ns"].to_numpy(dtype=float) / 1e6 / _steps(b),
        }
    )
    df["change_ms_per_step"] = df["b_ms_per_step"] - df["a_ms_per_step"]
    return df


def op_types(analysis: Analysis) -> pd.DataFrame:
    """Every op type of the window (``top_op_types`` without its limit), a tf.function's
    ``__inference_<name>_<id>`` named without its id; index: op type."""
    ops = top_op_types(analysis.run, limit=1 << 62, window=analysis.window)
    if ops.empty:
        return pd.DataFrame(columns=["count", "total_ms", "eigen_ms"], dtype=float)
    names = ops["op_type"].astype(str).str.replace(_FUNCTION_ID, r"\1", regex=True)
    ops = ops.assign(op_type=names, eigen_ms=ops["total_ms"] * ops["parallelism"].fillna(0))
    return ops.groupby("op_type")[["count", "total_ms", "eigen_ms"]].sum()


def ops_diff(a: Analysis, b: Analysis, limit: int = TOP_OPS) -> pd.DataFrame:
    """The op types whose time or achieved parallelism changed most: op_type, a/b count per
    step, a/b ms per step, change_ms_per_step, a/b parallelism, change_parallelism.

    Ranked by the larger of the change in time (as a share of the longer median step) and the
    change in parallelism (relative to the larger of the two, at least 1, weighted by the op
    type's larger share of its step), so an op type that takes no time ranks low."""
    oa, ob = op_types(a), op_types(b)
    names = list(dict.fromkeys([*oa.index, *ob.index]))
    oa, ob = oa.reindex(names).fillna(0.0), ob.reindex(names).fillna(0.0)
    na, nb = _steps(a), _steps(b)
    df = pd.DataFrame(
        {
            "op_type": names,
            "a_count_per_step": oa["count"].to_numpy(dtype=float) / na,
            "b_count_per_step": ob["count"].to_numpy(dtype=float) / nb,
            "a_ms_per_step": oa["total_ms"].to_numpy(dtype=float) / na,
            "b_ms_per_step": ob["total_ms"].to_numpy(dtype=float) / nb,
        }
    )
    df["change_ms_per_step"] = df["b_ms_per_step"] - df["a_ms_per_step"]
    with np.errstate(invalid="ignore", divide="ignore"):
        df["a_parallelism"] = oa["eigen_ms"].to_numpy() / oa["total_ms"].to_numpy()
        df["b_parallelism"] = ob["eigen_ms"].to_numpy() / ob["total_ms"].to_numpy()
    df["change_parallelism"] = df["b_parallelism"] - df["a_parallelism"]
    step = max(float(np.median(step_ms(a))), float(np.median(step_ms(b))), 1e-9)
    share = np.maximum(df["a_ms_per_step"], df["b_ms_per_step"]) / step
    top = np.fmax(np.fmax(df["a_parallelism"], df["b_parallelism"]), 1.0)
    score = np.fmax(
        df["change_ms_per_step"].abs() / step,
        (df["change_parallelism"].abs() / top).fillna(0.0) * np.minimum(share, 1.0),
    )
    order = np.argsort(-score.to_numpy(), kind="stable")[:limit]
    return df.iloc[order].reset_index(drop=True)


def findings_diff(a: Analysis, b: Analysis) -> pd.DataFrame:
    """Findings by (id, pool): status "appeared" (only in B), "went away" (only in A) or
    "both"; with the severity and message of the side that has it (B's when both)."""
    in_a = {(f.id, f.pool): f for f in a.findings}
    in_b = {(f.id, f.pool): f for f in b.findings}
    rows = []
    for key in dict.fromkeys([*in_b, *in_a]):
        status = (
            "both" if key in in_a and key in in_b else "appeared" if key in in_b else "went away"
        )
        f = in_b.get(key) or in_a[key]
        rows.append((key[0], key[1], status, f.severity.value, f.message))
    order = {"appeared": 0, "went away": 1, "both": 2}
    rows.sort(key=lambda r: order[r[2]])
    return pd.DataFrame(rows, columns=["id", "pool", "status", "severity", "message"])


def notes(a: Analysis, b: Analysis) -> list[str]:
    """What the reader should know about how the two were matched."""
    out = []
    if a.steps.source != b.steps.source:
        out.append(
            f"the steps differ in what they are: {a.steps.source} in A, {b.steps.source} in B"
        )
    batches = [x.steps.stats().get("batches_per_step") for x in (a, b)]
    if batches[0] != batches[1]:
        shown = ["-" if v is None else f"{v:g}" for v in batches]
        out.append(f"batches per step differ: {shown[0]} in A, {shown[1]} in B")
    for x, side in ((a, "A"), (b, "B")):
        mode = x.window_basis.split()[0].rstrip(":")
        if mode != "steady":
            out.append(
                f"{side} is compared over its window, not its steady state: {x.window_basis}"
            )
    return out


__all__ = ["RunsNotComparable", "compare", "diff"]
