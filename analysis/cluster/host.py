"""One host of a multi-host job, analysed on its own and reduced to what the cross-host
view needs: a plain, picklable ``HostSummary`` (an executor's worker process returns it; a
Dask worker ships it back), never the host's whole trace.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.model.vocabulary import COLLECTIVE_OP_PREFIXES

STEP_COLUMNS = ("step", "start_wall_ns", "end_wall_ns", "call_ms", "period_ms", "collective_ms")


@dataclass(frozen=True)
class HostSummary:
    """A host's figures for the cross-host view.

    ``steps``: one row per steady step (``STEP_COLUMNS``): its number, start and end on the
    wall clock (ns since the epoch, the axis the hosts share), the step call's length, the
    period to the next step's start (NaN for the last), and the time inside collective ops.
    ``pools``/``cpu``: the host's pool and CPU tables as ``tftrace analyze`` computes them.
    ``error``: why the host could not be analysed (the other fields are then empty)."""

    name: str
    path: str
    hostname: str | None = None
    status: str | None = None
    returncode: int | None = None
    usable_cpus: int | None = None
    pool_sizes: dict[str, int | None] = field(default_factory=dict)
    window: str = ""
    headline: tuple[str, ...] = ()
    steps: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=STEP_COLUMNS))
    pools: pd.DataFrame = field(default_factory=pd.DataFrame)
    cpu: pd.DataFrame = field(default_factory=pd.DataFrame)
    findings: tuple[dict[str, Any], ...] = ()
    collective_ops: int = 0
    exception: str | None = None  # the workload's own uncaught exception, first line
    clock_sync: dict[str, Any] = field(default_factory=dict)  # cluster_task.clock_sync
    error: str | None = None

    @property
    def died(self) -> bool:
        """The workload ended before its end: killed, crashed or exited without its own
        account (no trace flushed, as a lost host)."""
        return self.status == "crashed" or (bool(self.returncode) and self.exception is None)

    @property
    def failed(self) -> bool:
        """The workload raised (a peer that went away fails a worker's collectives)."""
        return self.exception is not None

    def ending(self) -> str:
        """How its workload ended, in words."""
        if self.failed:
            return f"its workload raised {self.exception}"
        if self.died:
            return f"its workload died (status {self.status}, exit code {self.returncode})"
        return f"its workload ended normally (status {self.status})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "hostname": self.hostname,
            "status": self.status,
            "returncode": self.returncode,
            "usable_cpus": self.usable_cpus,
            "pool_sizes": self.pool_sizes,
            "window": self.window,
            "headline": list(self.headline),
            "steps": len(self.steps),
            "collective_ops": self.collective_ops,
            "exception": self.exception,
            "died": self.died,
            "findings": list(self.findings),
            "error": self.error,
        }


def collective_ms(run: Any, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, int]:
    """ms inside collective ops (their union, any thread) within each [start, end] span, and
    how many collective ops the run has."""
    ops = op_events(run)
    types = ops["op_type"].astype(str)
    hit = ops[types.str.startswith(COLLECTIVE_OP_PREFIXES).to_numpy()]
    out = np.zeros(len(start))
    if hit.empty or not len(start):
        return out, len(hit)
    s, e = union(hit["start_ns"].to_numpy(np.int64), hit["end_ns"].to_numpy(np.int64))
    for i, (lo, hi) in enumerate(zip(start, end, strict=True)):
        cs, ce = clip(s, e, int(lo), int(hi))
        out[i] = float((ce - cs).sum()) / 1e6
    return out, len(hit)


def host_steps(analysis: Any) -> tuple[pd.DataFrame, int]:
    """The steady steps of a host on the wall clock, with their collective time."""
    t = analysis.steps.table
    start = t["start_ns"].to_numpy(np.int64)
    end = t["end_ns"].to_numpy(np.int64)
    origin = analysis.run.origin.wall_ns
    period = np.r_[np.diff(start) / 1e6, np.nan] if len(start) else np.zeros(0)
    coll, count = collective_ms(analysis.run, start, end)
    frame = pd.DataFrame(
        {
            "step": t["step"].to_numpy(np.int64),
            "start_wall_ns": start + origin,
            "end_wall_ns": end + origin,
            "call_ms": (end - start) / 1e6,
            "period_ms": period,
            "collective_ms": coll,
        }
    )
    return frame, count


def _exception(exc: Any) -> str | None:
    if exc is None:
        return None
    lines = [ln.strip() for ln in (exc.message or "").splitlines() if ln.strip()]
    # TF's graph errors open with where the node was defined; the cause follows
    skip = ("Graph execution error", "Detected at node", "File ")
    cause = next((ln for ln in lines if not ln.startswith(skip)), "")
    return f"{exc.type}: {cause}" if cause else str(exc.type)


def summarize_host(
    name: str,
    path: str,
    window: str = "steady",
    warmup_steps: int = 1,
    cpus: int | None = None,
) -> HostSummary:
    """Load and analyse one host's run (in whatever process the executor runs this) and
    reduce it to a ``HostSummary``; a host that cannot be analysed gets its ``error``.
    ``window``, ``warmup_steps``, ``cpus``: as ``tftrace.analyze`` takes them."""
    return summarize_and_keep(name, path, window, warmup_steps, cpus)[0]


def summarize_and_keep(
    name: str, path: str, window: str, warmup_steps: int, cpus: int | None
) -> tuple[HostSummary, Any]:
    """``summarize_host``, and the host's ``Analysis`` it was made from (None where there is
    none): for a caller that needs both, such as a comparison of two jobs, so that each host
    is analysed once (an Analysis pickles back from a worker process)."""
    base: dict[str, Any] = {"name": name, "path": path}
    try:
        analysis = analyse_into(base, window, warmup_steps, cpus)
        if isinstance(analysis, str):
            return HostSummary(**base, error=f"no trace to analyse ({analysis})"), None
        return summary_of(base, analysis), analysis
    except Exception as e:
        return failed(base, e), None


def analyse_into(base: dict[str, Any], window: str, warmup_steps: int, cpus: int | None) -> Any:
    """Load ``base["path"]``, add its manifest's facts to ``base`` (the ``HostSummary``
    fields known so far, kept when the analysis then fails) and analyse it: the
    ``Analysis``, or why there is no trace to analyse (a string)."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.model.run import load

    run = load(Path(base["path"]))
    base.update(host_facts(run))
    lacks = missing_trace(run)
    if lacks is not None:
        return lacks
    return analyze(run, window=window, warmup_steps=warmup_steps, cpus=cpus)


def host_facts(run: Any) -> dict[str, Any]:
    """What a host's manifest says of it, as ``HostSummary`` fields."""
    m = run.manifest
    return {
        "hostname": m.host.hostname,
        "status": m.status,
        "returncode": m.workload.returncode,
        "usable_cpus": m.usable_cpus,
        "pool_sizes": {p: m.pool(p).size for p in ("inter_op", "intra_op")},
        "exception": _exception(m.workload.exception),
        "clock_sync": dict((m.raw.get("clock") or {}).get("sync") or {}),
    }


def missing_trace(run: Any) -> str | None:
    """Why a host's run has no trace to analyse (what its sources lack), or None."""
    if run.xplane is None or run.events.empty:
        return "; ".join(run.missing) or "no trace events"
    return None


def summary_of(base: dict[str, Any], analysis: Any) -> HostSummary:
    """The summary of a host analysed (``base``: ``name``, ``path`` and ``host_facts``)."""
    from tftrace.analysis.render.core_use_text import headline

    steps, count = host_steps(analysis)
    # cpus given to the analysis replace the recorded count there, so here too
    cpus = analysis.run.manifest.usable_cpus
    return HostSummary(
        **{**base, "usable_cpus": cpus},
        window=analysis.window_basis,
        headline=tuple(headline(analysis)),
        steps=steps,
        pools=analysis.pools.copy(),
        cpu=analysis.cpu.copy(),
        findings=tuple(f.to_json() for f in analysis.findings),
        collective_ops=count,
    )


def failed(base: dict[str, Any], e: Exception) -> HostSummary:
    """A host that could not be analysed: its ``error`` says why in one line (for a bug,
    where: one host's bad data must not lose the others)."""
    from tftrace.errors import TftraceError

    if isinstance(e, TftraceError):
        return HostSummary(**base, error=str(e))
    where = traceback.extract_tb(e.__traceback__)[-1]
    return HostSummary(
        **base, error=f"{type(e).__name__}: {e} ({Path(where.filename).name}:{where.lineno})"
    )
