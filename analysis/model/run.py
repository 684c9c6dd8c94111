"""``load(path) -> Run``: a run directory (or TensorBoard log dir, or .xplane.pb) as DataFrames."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model import os_samples, pyspy_samples
from tftrace.analysis.model.locate import locate
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.regions import pair_regions
from tftrace.analysis.model.schema import EVENTS, PYTHON, REGIONS, SAMPLES, empty, validate
from tftrace.analysis.model.threads import TraceLine, build_threads
from tftrace.analysis.model.trace_events import (
    FLOW_STATS,
    HostTrace,
    event_times,
    events_frame,
    host_trace,
    trace_lines,
    wanted_plane,
)
from tftrace.analysis.xplane.columns import XPlaneDecodeError
from tftrace.analysis.xplane.decode import decode
from tftrace.errors import TraceError
from tftrace.tracer import rundir


@dataclass(frozen=True)
class Origin:
    """Where the run's time axis starts, on both clocks (ns)."""

    wall_ns: int
    monotonic_ns: int | None  # None for a bare trace: no OS-side data to place


@dataclass(frozen=True)
class Run:
    path: Path
    xplane: Path | None
    manifest: dict[str, Any] | None
    origin: Origin
    threads: pd.DataFrame
    events: pd.DataFrame
    regions: pd.DataFrame
    samples: pd.DataFrame
    python: pd.DataFrame
    missing: list[str] = field(default_factory=list)  # what a partial run lacks, in words
    notes: list[str] = field(default_factory=list)


def _decode(xplane: Path) -> HostTrace:
    try:
        data = xplane.read_bytes()
    except OSError as e:
        raise TraceError(f"{xplane}: cannot read ({e.strerror})") from None
    if not data:
        raise TraceError(f"{xplane}: empty file")
    try:
        # Only the flow ids are read from event stats: promoted, and no stats table at all.
        space = decode(
            data, planes=wanted_plane, event_stats=tuple(FLOW_STATS.values()), stats=False
        )
    except XPlaneDecodeError as e:
        raise TraceError(f"{xplane}: not a valid xplane trace ({e})") from None
    return host_trace(space, str(xplane))


def _profile_start(manifest: dict[str, Any] | None, trace: HostTrace | None) -> int | None:
    """When the trace's clock starts (wall ns): the trace says so since TF 2.17; before,
    the workload's own reading of the clock as it started the profiler stands in (~0.1 ms)."""
    if trace is not None and trace.profile_start_ns:
        return trace.profile_start_ns
    status = ((manifest or {}).get("sources") or {}).get("tf_profiler") or {}
    anchor = status.get("started_anchor") or status.get("start_anchor")
    return int(anchor["wall_ns"]) if anchor else None


def _origin(manifest: dict[str, Any] | None, trace: HostTrace | None) -> Origin:
    start = ((manifest or {}).get("clock") or {}).get("start")
    if start:
        return Origin(int(start["wall_ns"]), int(start["monotonic_ns"]))
    if trace is not None and trace.profile_start_ns:
        return Origin(trace.profile_start_ns, None)
    return Origin(0, None)


def _missing_trace(manifest: dict[str, Any] | None) -> str:
    status = ((manifest or {}).get("sources") or {}).get("tf_profiler") or {}
    reason = status.get("reason") or status.get("state") or "no xplane file"
    return f"trace: none ({reason})"


def load(path: Path | str, session: str | None = None) -> Run:
    """Load a run; raises TraceError (one line naming the file) on bad input."""
    located = locate(Path(path), session)
    root, manifest = located.root, located.manifest
    missing: list[str] = []
    trace = _decode(located.xplane) if located.xplane is not None else None
    if trace is None:
        missing.append(_missing_trace(manifest))
    origin = _origin(manifest, trace)
    on_disk = manifest is not None
    identity = rundir.read_json_or_none(root / rundir.IDENTITY) if on_disk else None
    table = os_samples.read_thread_table(root) if on_disk else None
    columns = os_samples.read_sample_columns(root, missing) if on_disk else None
    pyspy_events = pyspy_samples.read_pyspy(root / rundir.PYSPY_TRACE, missing) if on_disk else None
    if on_disk:
        for what, present in (
            ("thread identity", identity),
            ("os sampler", columns),
            ("py-spy", pyspy_events),
        ):
            if present is None:
                missing.append(f"{what}: none ({_source_reason(manifest, what)})")
    profile_start = _profile_start(manifest, trace)
    times = event_times(trace, origin.wall_ns, profile_start) if trace is not None else None
    lines: list[TraceLine] = trace_lines(trace, *times) if trace and times else []
    threads, line_threads = build_threads(
        lines,
        identity,
        table,
        pyspy_samples.python_threads(pyspy_events or []),
        origin.monotonic_ns or 0,
    )
    thread_of_tid = {
        int(t): int(k)
        for t, k in zip(threads["tid"], threads["thread"], strict=True)
        if pd.notna(t)
    }
    events, regions = _trace_tables(trace, threads, line_threads, times)
    samples = (
        validate(
            os_samples.samples_frame(columns, thread_of_tid, origin.monotonic_ns or 0), SAMPLES
        )
        if columns is not None
        else empty(SAMPLES)
    )
    python = _python_table(pyspy_events, manifest, thread_of_tid, origin)
    return Run(
        root,
        located.xplane,
        manifest,
        origin,
        threads,
        events,
        regions,
        samples,
        python,
        missing,
        list(located.notes),
    )


def _source_reason(manifest: dict[str, Any] | None, what: str) -> str:
    key = {"thread identity": "thread_identity", "os sampler": "os_sampler", "py-spy": "pyspy"}[
        what
    ]
    status = ((manifest or {}).get("sources") or {}).get(key) or {}
    return str(status.get("reason") or status.get("state") or "not recorded")


def _trace_tables(
    trace: HostTrace | None,
    threads: pd.DataFrame,
    line_threads: list[int],
    times: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    if trace is None or times is None:
        return empty(EVENTS), empty(REGIONS)
    thread_of_line = {int(row): key for row, key in zip(trace.line_rows, line_threads, strict=True)}
    python_pools = {Pool.PYTHON_MAIN.value, Pool.PYTHON_OTHER.value}
    python_threads = set(threads.loc[threads["pool"].isin(python_pools), "thread"].tolist())
    events = events_frame(trace, thread_of_line, python_threads, times)
    return events, pair_regions(events)


def _python_table(
    pyspy_events: list[dict[str, Any]] | None,
    manifest: dict[str, Any] | None,
    thread_of_tid: dict[int, int],
    origin: Origin,
) -> pd.DataFrame:
    if not pyspy_events or origin.monotonic_ns is None:
        return empty(PYTHON)
    status = ((manifest or {}).get("sources") or {}).get("pyspy") or {}
    anchor = status.get("start_anchor") or {}
    offset = int(anchor.get("monotonic_ns", origin.monotonic_ns)) - origin.monotonic_ns
    intervals = pyspy_samples.stack_intervals(pyspy_events)
    if not intervals:
        return empty(PYTHON)
    return validate(pyspy_samples.python_frame(intervals, thread_of_tid, offset), PYTHON)
