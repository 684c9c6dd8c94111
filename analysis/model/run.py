"""``load(path) -> Run``: a run directory (or TensorBoard log dir, or .xplane.pb) as DataFrames."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model import machine_samples, os_samples, pyspy_samples, run_files
from tftrace.analysis.model.locate import locate
from tftrace.analysis.model.machine_samples import Machine
from tftrace.analysis.model.memory import check_fits
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.regions import pair_regions
from tftrace.analysis.model.schema import EVENTS, PYTHON, REGIONS, SAMPLES, empty, validate
from tftrace.analysis.model.threads import TraceLine, build_threads
from tftrace.analysis.model.timed_steps import empty_timed_steps, read_timed_steps
from tftrace.analysis.model.trace_events import (
    HOST_EVENT_COLUMNS,
    PROMOTED_STATS,
    HostTrace,
    event_times,
    events_frame,
    host_trace,
    trace_lines,
    wanted_plane,
)
from tftrace.analysis.progress import LOAD_STAGES, stage
from tftrace.analysis.xplane.columns import XPlaneDecodeError
from tftrace.analysis.xplane.decode import decode
from tftrace.errors import TraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.safe_read import read_regular_bytes


@dataclass(frozen=True)
class Origin:
    """Where the run's time axis starts, on both clocks (ns)."""

    wall_ns: int
    monotonic_ns: int | None  # None for a bare trace: no OS-side data to place


@dataclass(frozen=True, repr=False)
class Run:
    """One recorded run as tables: what ``tftrace.load`` returns.

    Every time is int64 ns on one axis (since the recorder started; for a bare trace, since
    the profile started). Columns are declared in ``tftrace.analysis.model.schema``:

    - ``threads``: one row per thread any source saw: trace line, OS tid and name, TF's name,
      its ``pool`` and the ``evidence`` that decided it (``unmapped`` when none did).
    - ``events``: every host trace event: thread, name, op name/type, kind, start/end, flow ids.
    - ``regions``: thread-pool busy intervals, each joined to the Record that scheduled it
      (``queue_ns`` = how long it waited).
    - ``samples``: the OS sampler's series per thread: state, CPU ns, run-queue wait ns.
    - ``python``: py-spy's samples as intervals of one Python stack per thread.
    - ``machine``: the machine beside the workload, a few readings a second (a ``Machine``):
      each CPU's busy, idle and steal time, the other processes' CPU time, the cgroup's
      throttling; empty where the run has none.
    - ``timed_steps``: the workload's own timing of its steps, profiled or not (a sweep's
      runs, a run profiled over a window: ``model.timed_steps``); empty where it has none.
    - ``manifest``: what ran and how (a ``Manifest``: versions, CPUs, pool sizes and why;
      empty for a bare trace); ``missing``: what a partial run lacks, in words; ``notes``:
      remarks on how it was read.

    Example::

        run = tftrace.load("tftrace-runs/demo")
        run.threads.groupby("pool", observed=True).size()  # threads per pool
    """

    path: Path
    xplane: Path | None
    manifest: Manifest  # Manifest.empty() for a bare trace (manifest.exists is False)
    origin: Origin
    threads: pd.DataFrame
    events: pd.DataFrame
    regions: pd.DataFrame
    samples: pd.DataFrame
    python: pd.DataFrame
    missing: list[str] = field(default_factory=list)  # what a partial run lacks, in words
    notes: list[str] = field(default_factory=list)
    machine: Machine = field(default_factory=Machine.empty)
    timed_steps: pd.DataFrame = field(default_factory=empty_timed_steps)
    # Intermediates the analyses share (``model.memo.per_run``); empty in each new Run.
    memo: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        lacks = f", missing {len(self.missing)}" if self.missing else ""
        return (
            f"<Run {self.path}: {len(self.threads)} threads, {len(self.events)} events, "
            f"{len(self.regions)} regions, {len(self.samples)} OS samples{lacks}>"
        )


def _decode(xplane: Path) -> HostTrace:
    stage(LOAD_STAGES[0])
    # A regular file only, read to its size as it was opened, once the memory check passed.
    data = read_regular_bytes(xplane, check=check_fits)
    if not data:
        raise TraceError(f"{xplane}: empty file")
    stage(LOAD_STAGES[1])
    try:
        # Only the flow ids and step numbers are read from event stats: promoted, and no stats
        # table at all.
        space = decode(
            data, planes=wanted_plane, event_stats=tuple(PROMOTED_STATS.values()), stats=False
        )
    except XPlaneDecodeError as e:
        raise TraceError(f"{xplane}: not a valid xplane trace ({e})") from None
    # Without a stats table the file's bytes are read no more, nor are the event columns that
    # the tables are not built from: free them (50 + 40 MB of a 2 M-event trace) before the
    # tables take their own memory.
    used = {name: space.events[name] for name in HOST_EVENT_COLUMNS}
    return host_trace(dataclasses.replace(space, events=used, data=b""), str(xplane))


def _profile_start(manifest: Manifest, trace: HostTrace | None) -> int | None:
    """When the trace's clock starts (wall ns): the trace says so since TF 2.17; before,
    the workload's own reading of the clock as it started the profiler stands in (~0.1 ms)."""
    if trace is not None and trace.profile_start_ns:
        return trace.profile_start_ns
    profiler = manifest.source("tf_profiler")
    anchor = profiler.started_anchor or profiler.start_anchor
    return anchor.wall_ns if anchor else None


def _origin(manifest: Manifest, trace: HostTrace | None) -> Origin:
    start = manifest.clock.start
    if start:
        return Origin(start.wall_ns, start.monotonic_ns)
    if trace is not None and trace.profile_start_ns:
        return Origin(trace.profile_start_ns, None)
    return Origin(0, None)


def _missing_trace(manifest: Manifest) -> str:
    profiler = manifest.source("tf_profiler")
    reason = profiler.reason or profiler.state or "no xplane file"
    return f"trace: none ({reason})"


def load(path: Path | str, session: str | None = None) -> Run:
    """Read a run into tables (see ``Run``); nothing is analysed yet.

    Args:
        path: a run directory written by ``tftrace record``, a TensorBoard log directory
            (``plugins/profile/<session>/<host>.xplane.pb``), one session directory, or one
            ``.xplane.pb`` file (its run's other files are found when it sits in a run).
        session: which profile session of a log directory to read (default: the newest).

    Returns:
        A ``Run``. A partial run (no trace, no OS samples, ...) loads, and ``Run.missing``
        says what it lacks.

    Raises:
        TraceError (a ``TftraceError``): the path is missing, empty or not a trace; the
        message is one line naming the file.

    Example::

        import tftrace

        run = tftrace.load("tftrace-runs/demo")
        print(run.threads[["pool", "tid", "os_name"]])
    """
    located = locate(Path(path), session)
    root, manifest = located.root, located.manifest
    missing: list[str] = []
    trace = _decode(located.xplane) if located.xplane is not None else None
    if trace is None:
        missing.append(_missing_trace(manifest))
    stage(LOAD_STAGES[2])
    origin = _origin(manifest, trace)
    on_disk = manifest.exists
    identity = run_files.read_identity(root, missing) if on_disk else None
    table = run_files.read_thread_table(root, missing) if on_disk else None
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
    machine = _machine(root, manifest, origin, missing) if on_disk else Machine.empty()
    timed = (
        read_timed_steps(root, origin.monotonic_ns, missing)
        if on_disk and origin.monotonic_ns is not None
        else empty_timed_steps()
    )
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
        machine,
        timed,
    )


def _machine(root: Path, manifest: Manifest, origin: Origin, missing: list[str]) -> Machine:
    """The machine readings; their absence is noted where the sampler was to take them."""
    machine = machine_samples.read_machine(root, origin.monotonic_ns or 0, missing)
    if machine is not None:
        return machine
    sampler = manifest.source("os_sampler")
    wanted = sampler.details.get("machine")
    if sampler.state == "recorded" and isinstance(wanted, dict) and wanted.get("hz"):
        missing.append(f"machine: none ({wanted.get('error') or 'no reading written'})")
    return Machine.empty()


def _source_reason(manifest: Manifest, what: str) -> str:
    key = {"thread identity": "thread_identity", "os sampler": "os_sampler", "py-spy": "pyspy"}[
        what
    ]
    source = manifest.source(key)
    return source.reason or source.state or "not recorded"


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
    manifest: Manifest,
    thread_of_tid: dict[int, int],
    origin: Origin,
) -> pd.DataFrame:
    if not pyspy_events or origin.monotonic_ns is None:
        return empty(PYTHON)
    anchor = manifest.source("pyspy").start_anchor
    offset = (anchor.monotonic_ns if anchor else origin.monotonic_ns) - origin.monotonic_ns
    intervals = pyspy_samples.stack_intervals(pyspy_events)
    if not intervals:
        return empty(PYTHON)
    return validate(pyspy_samples.python_frame(intervals, thread_of_tid, offset), PYTHON)
