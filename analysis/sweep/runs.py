"""One timed run (or a setting's copies run at once) as a row of a sweep's runs table: its
setting (``Setting.columns``: pools, CPUs, variables), its timing (``timing.py``), the figure
its objective compares, and the pool sizes it really had.

Inputs are the timed runs' records (``TimedRun``: the run directory, the setting asked for,
what the parent measured); this module reads their files and never runs anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tftrace.analysis.model.timed_steps import read_timed_steps
from tftrace.analysis.sweep.timing import (
    LATENCY_COLUMNS,
    Latency,
    Measure,
    Objective,
    Timing,
    TimingError,
    measure,
)
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.sweep import TimedRun

POOLS = {"intra": "intra_op", "inter": "inter_op"}
SETTERS = {key: f"set_{pool}_parallelism_threads" for key, pool in POOLS.items()}


def usable_cpus(manifest: Manifest) -> int:
    """``Manifest.usable_cpus`` of a run; 1 when it does not say."""
    return manifest.usable_cpus or 1


def _timing(facts: TimedRun, how: Measure, marker: str | None, warmup: int) -> Timing:
    missing: list[str] = []  # a damaged steps.json times nothing rather than part of the run
    steps = read_timed_steps(facts.path, 0, missing)
    if missing:
        raise TimingError(f"{facts.path}: {missing[0]}")
    report = rundir.read_json_or_none(facts.path / rundir.WORKLOAD_REPORT) or {}
    return measure(steps, report, how, marker, (facts.wall_s, facts.cpu_s), warmup)


def _latency_row(latency: Latency | None) -> dict[str, float | None]:
    if latency is None:
        return dict.fromkeys(LATENCY_COLUMNS)
    return dict(latency.to_row())


def _pools(row: dict[str, Any], manifest: Manifest) -> None:
    for key, pool in POOLS.items():
        calls = manifest.workload.setter_calls
        row[f"{key}_effective"] = manifest.pool(pool).size
        row[f"{key}_source"] = manifest.pool(pool).source
        row[f"{key}_calls"] = [c.to_json() for c in calls if c.setter == SETTERS[key]]


def time_run(
    facts: TimedRun,
    how: Measure,
    marker: str | None,
    warmup: int = 1,
    objective: Objective = Objective.THROUGHPUT,
) -> dict[str, Any]:
    """One row of the runs table: the timing and the pool sizes the run really had."""
    timing = _timing(facts, how, marker, warmup)
    cpus = usable_cpus(facts.manifest)
    row: dict[str, Any] = {
        **facts.setting.columns(),
        "round": facts.round,
        "time_s": timing.figure(objective),
        "span_s": timing.seconds,
        "steps": timing.steps,
        "cpu_util": (
            timing.cpu_seconds / (timing.seconds * cpus)
            if timing.cpu_seconds is not None and timing.seconds > 0
            else None
        ),
        "basis": timing.basis,
        "wall_s": facts.wall_s,
        "process_cpu_s": facts.cpu_s,
        "path": str(facts.path),
        "server": timing.server,
        "per_s": timing.per_second,
        **_latency_row(timing.latency),
    }
    _pools(row, facts.manifest)
    return row


def time_copies(
    copies: Sequence[TimedRun],
    how: Measure,
    marker: str | None,
    warmup: int = 1,
    objective: Objective = Objective.THROUGHPUT,
) -> dict[str, Any]:
    """One row of the runs table for a setting's copies run at once: their steps (requests)
    per second summed, the latency of all their requests together, and each copy's own
    figures in ``copies``. For throughput the run's time is 1 / that sum."""
    timings = [_timing(c, how, marker, warmup) for c in copies]
    for c, t in zip(copies, timings, strict=True):
        if t.per_second is None:
            raise TimingError(
                f"--instances counts steps or requests, and copy {c.copy} of "
                f"{c.setting.label()} was timed over {t.basis}"
            )
    total = sum(t.per_second or 0.0 for t in timings)
    durations = [t.durations_ns for t in timings if t.durations_ns is not None]
    pooled = Latency.of(_concat(durations)) if durations else None
    if objective is Objective.THROUGHPUT:
        time_s = 1 / total
    elif pooled is None:
        raise TimingError(f"--objective {objective.value}: no request or step was timed")
    else:
        time_s = (pooled.p50_ms if objective is Objective.P50 else pooled.p99_ms) / 1e3
    cores = sum(len(c.cpus) for c in copies)
    busy = [t.cpu_seconds for t in timings]
    windows = [t.window_ns for t in timings if t.window_ns is not None]
    together = None
    if len(windows) == len(timings):
        shared = min(e for _, e in windows) - max(s for s, _ in windows)
        together = max(shared, 0) / max(e - s for s, e in windows)
    first = copies[0]
    row: dict[str, Any] = {
        **first.setting.columns(),
        "round": first.round,
        "time_s": time_s,
        "span_s": max(t.seconds for t in timings),
        "steps": sum(t.steps or 0 for t in timings),
        "cpu_util": (
            sum(b or 0.0 for b in busy)
            / sum(t.seconds * len(c.cpus) for c, t in zip(copies, timings, strict=True))
            if all(b is not None for b in busy) and cores
            else None
        ),
        "basis": "; ".join(dict.fromkeys(t.basis for t in timings)),
        "wall_s": max(c.wall_s for c in copies),
        "process_cpu_s": None,
        "path": str(first.path.parent),
        # how much of the longest copy's window all copies' windows shared
        "together": together,
        "server": all(t.server for t in timings),
        "per_s": total,
        **_latency_row(pooled),
        "copies": [
            {
                "copy": c.copy,
                "path": str(c.path),
                "cpus": list(c.cpus),
                "steps": t.steps,
                "span_s": t.seconds,
                "per_s": t.per_second,
                **_latency_row(t.latency),
            }
            for c, t in zip(copies, timings, strict=True)
        ],
    }
    _pools(row, first.manifest)
    return row


def _concat(parts: list[Any]) -> Any:
    import numpy as np

    return np.concatenate(parts)
