"""Run a workload once per setting and round: the recording half of ``tftrace sweep``.

Each run is a fresh process (the pools are sized once per process), sized through
``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS``, with the setting's other variables
in its environment and, where the setting says, pinned to the first K of the CPUs this process
may use, before it starts; only the step timer runs inside: no profiler, sampler or py-spy to
disturb what is timed. Rounds interleave the settings (A B C A B C ...) so that a slow minute
of a shared machine lands on every setting alike. Optionally each setting is also recorded
once with every source, for its analysis. What a setting is: ``sweep_setting.py``.

A setting may run several instances of the workload at once (``tftrace sweep --instances``):
k copies, each pinned before it starts to its own contiguous share of the CPUs this process
may use, each in its own run directory (``runs/NNN-<setting>/copy-I``), their pools sized
to the share unless the sweep sizes them.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import rundir
from .manifest_reader import Manifest
from .options import RecordOptions, Target
from .recorder import RecordError, RecordResult, interrupt_recordings, record
from .sweep_setting import (
    Setting,
    SweepError,
    grid,
    instance_grid,
    ladder,
    parse_instances,
    parse_values,
    schedule,
    shares,
)

# The settings live in sweep_setting.py; their names are imported from here too, as before.
__all__ = [
    "RECORDED_DIR",
    "SWEEP_FILE",
    "SWEEP_KIND",
    "TIMED_DIR",
    "Progress",
    "Setting",
    "SweepError",
    "SweepOptions",
    "TimedRun",
    "check_exit",
    "grid",
    "instance_grid",
    "ladder",
    "parse_instances",
    "parse_values",
    "recorded_run",
    "run_recorded",
    "run_timed",
    "schedule",
    "shares",
    "timed_copies",
    "timed_run",
    "timing_options",
]

SWEEP_FILE = "sweep.json"
SWEEP_KIND = "tftrace-sweep"  # sweep.json's "kind": what tells a sweep directory from a run's
TIMED_DIR = "runs"
RECORDED_DIR = "recorded"


@dataclass(frozen=True)
class SweepOptions:
    target: Target
    settings: tuple[Setting, ...]
    repeat: int
    output: Path
    record_each: bool = False  # one fully recorded run per setting, for its analysis
    marker: str | None = None  # the workload's Trace(NAME) blocks to time
    explain: tuple[Setting, ...] = ()  # settings to record for an explanation only
    # Apply the workload's own threading setter calls; by default the sweep owns the pool
    # sizes: they are recorded, not applied.
    keep_script_settings: bool = False
    # The CPUs this process may use, which settings with instances share out and settings
    # with ``cpus`` take the first of; (): the CPUs this process may use when a run starts.
    cpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class TimedRun:
    """One timed run as its parent saw it: made here when it runs, re-read by ``load_sweep``,
    timed from its files by ``analysis.sweep.runs.time_run``."""

    setting: Setting
    round: int
    path: Path  # its run directory
    wall_s: float  # the process as its parent saw it, start-up included
    cpu_s: float | None  # the process's CPU time, by the kernel's accounting (its rusage)
    manifest: Manifest = field(repr=False)
    exit_code: int = 0  # a sweep keeps only the runs that exited 0
    copy: int | None = None  # which copy of a setting with instances; None: a lone process
    cpus: tuple[int, ...] = ()  # the CPUs the run (or copy) was pinned to; (): not pinned


def _child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip()[:200] if lines else ""


def _record(options: RecordOptions) -> RecordResult:
    try:
        return record(options)
    except RecordError as e:
        raise SweepError(str(e)) from None


def timing_options(
    target: Target,
    path: Path,
    env: dict[str, str | None],
    marker: str | None = None,
    step_timer: bool = True,
    keep_script_settings: bool = False,
) -> RecordOptions:
    """A timed run: no profiler, sampler, py-spy or identity watcher, only the step timer."""
    return RecordOptions(
        target=target,
        output=path,
        tf_profiler=False,
        pyspy=False,
        sampler=False,
        thread_identity=False,
        step_timer=step_timer,
        step_marker=marker,
        keep_script_settings=keep_script_settings,
        env=env,
        echo=False,
    )


def _usable(cpus: Sequence[int]) -> tuple[int, ...]:
    return tuple(cpus) or tuple(sorted(os.sched_getaffinity(0)))


def timed_run(
    target: Target,
    setting: Setting,
    round_: int,
    path: Path,
    marker: str | None = None,
    keep_script_settings: bool = False,
    cpus: Sequence[int] = (),
) -> TimedRun:
    """One lone process, pinned to the first ``setting.cpus`` of ``cpus`` (default: the
    CPUs this process may use) where the setting says."""
    pinned = setting.pinned(_usable(cpus))
    cpu0, t0 = _child_cpu_s(), time.monotonic()
    options = timing_options(
        target, path, setting.env(), marker, keep_script_settings=keep_script_settings
    )
    result = _record(replace(options, cpu_affinity=pinned))
    wall, cpu = time.monotonic() - t0, _child_cpu_s() - cpu0
    return TimedRun(
        setting, round_, path, wall, cpu, result.manifest, result.exit_code, None, pinned or ()
    )


def timed_copies(
    target: Target,
    setting: Setting,
    round_: int,
    path: Path,
    cpus: Sequence[int],
    marker: str | None = None,
    keep_script_settings: bool = False,
) -> list[TimedRun]:
    """The setting's copies at once, copy I pinned to share I of ``cpus``, in ``path/copy-I``.

    Each copy's recorder runs on its own thread here; Ctrl-C (in the main thread) asks every
    copy to stop, as it asks a lone run, and waits for them."""
    parts = shares(cpus, setting.instances or 1)
    done: list[TimedRun | None] = [None] * len(parts)
    failed: list[BaseException] = []

    def one(i: int) -> None:
        t0 = time.monotonic()
        where = path / f"copy-{i}"
        options = timing_options(
            target, where, setting.env(), marker, keep_script_settings=keep_script_settings
        )
        try:
            result = _record(replace(options, cpu_affinity=parts[i]))
        except BaseException as e:  # shown by the caller, on its thread
            failed.append(e)
            return
        wall = time.monotonic() - t0
        done[i] = TimedRun(
            setting, round_, where, wall, None, result.manifest, result.exit_code, i, parts[i]
        )

    threads = [
        threading.Thread(target=one, args=(i,), name=f"tftrace-copy-{i}", daemon=True)
        for i in range(len(parts))
    ]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        interrupt_recordings()
        for t in threads:
            t.join()
        raise
    if failed:
        raise failed[0]
    return [run for run in done if run is not None]


def recorded_run(
    target: Target,
    setting: Setting,
    path: Path,
    keep_script_settings: bool = False,
    cpus: Sequence[int] = (),
) -> RecordResult:
    """One run with every source; a setting with instances is recorded as its first copy
    alone, pinned to its share of ``cpus``; one with ``cpus`` pinned as its timed runs are."""
    pinned: tuple[int, ...] | None
    if setting.instances:
        pinned = tuple(shares(_usable(cpus), setting.instances)[0])
    else:
        pinned = setting.pinned(_usable(cpus))
    return _record(
        RecordOptions(
            target=target,
            output=path,
            env=setting.env(),
            echo=False,
            keep_script_settings=keep_script_settings,
            cpu_affinity=pinned,
        )
    )


def check_exit(path: Path, exit_code: int, what: str) -> None:
    if exit_code == 0:
        return
    if exit_code in (130, 143):
        raise KeyboardInterrupt
    detail = _last_line(path / rundir.STDERR_LOG)
    raise SweepError(
        f"{what}: the workload exited with code {exit_code}"
        + (f" ({detail})" if detail else "")
        + f"; its output is in {path / rundir.STDERR_LOG.parent}"
    )


Progress = Callable[[str], None]


def run_timed(options: SweepOptions, progress: Progress) -> Iterator[list[TimedRun]]:
    """Every timed run in interleaved order, each a list: the lone process, or a setting's
    copies run at once; stops at the first failing run."""
    plan = schedule(options.settings, options.repeat)
    for n, (round_, setting) in enumerate(plan, start=1):
        progress(f"{setting.label()}, round {round_ + 1}/{options.repeat}")
        path = options.output / TIMED_DIR / f"{n:03d}-{setting.slug()}"
        what = f"{setting.label()} (round {round_ + 1})"
        if setting.instances is None:
            run = timed_run(
                options.target,
                setting,
                round_,
                path,
                options.marker,
                options.keep_script_settings,
                options.cpus,
            )
            check_exit(path, run.exit_code, what)
            yield [run]
            continue
        copies = timed_copies(
            options.target,
            setting,
            round_,
            path,
            options.cpus,
            options.marker,
            options.keep_script_settings,
        )
        for run in copies:
            check_exit(run.path, run.exit_code, f"{what}, copy {run.copy}")
        yield copies


def run_recorded(
    options: SweepOptions, settings: Sequence[Setting], progress: Progress
) -> Iterator[tuple[Setting, Path]]:
    for setting in settings:
        progress(f"{setting.label()}, recorded for analysis")
        path = options.output / RECORDED_DIR / setting.slug()
        result = recorded_run(
            options.target, setting, path, options.keep_script_settings, options.cpus
        )
        check_exit(path, result.exit_code, f"{setting.label()} (recorded)")
        yield setting, path
