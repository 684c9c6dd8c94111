"""Run a workload once per thread setting and round: the recording half of ``tftrace sweep``.

Each run is a fresh process (the pools are sized once per process), sized through
``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS``, with only the step timer inside:
no profiler, sampler or py-spy to disturb what is timed. Rounds interleave the settings
(A B C A B C ...) so that a slow minute of a shared machine lands on every setting alike.
Optionally each setting is also recorded once with every source, for its analysis.

A setting may run several instances of the workload at once (``tftrace sweep --instances``):
k copies, each pinned before it starts to its own contiguous share of the CPUs this process
may use, each in its own run directory (``runs/NNN-<setting>/copy-I``), their pools sized
to the share unless the sweep sizes them.
"""

from __future__ import annotations

import math
import resource
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tftrace.errors import TftraceError

from . import rundir
from .environment import POOL_ENV_VARS
from .manifest_reader import Manifest
from .options import RecordOptions, Target
from .recorder import RecordError, RecordResult, interrupt_recordings, record

SWEEP_FILE = "sweep.json"
SWEEP_KIND = "tftrace-sweep"  # sweep.json's "kind": what tells a sweep directory from a run's
TIMED_DIR = "runs"
RECORDED_DIR = "recorded"


class SweepError(TftraceError):
    """A sweep that cannot go on (one line for the user)."""


@dataclass(frozen=True, order=True)
class Setting:
    """Pool sizes for one process; None leaves the pool to TF (and the user's environment).

    With ``instances``, that many copies of the workload run at once, each pinned to its own
    ``cores`` CPUs, with these pool sizes each (a sweep fills them in: the share, unless it
    sweeps them)."""

    intra: int | None
    inter: int | None
    instances: int | None = None  # copies run at once; None: one process, not pinned
    cores: int | None = None  # the CPUs each copy is pinned to

    def env(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        if self.intra is not None:
            out[POOL_ENV_VARS["intra_op"]] = str(self.intra)
        if self.inter is not None:
            out[POOL_ENV_VARS["inter_op"]] = str(self.inter)
        return out

    def label(self) -> str:
        pools = f"intra {_value(self.intra)} · inter {_value(self.inter)}"
        if self.instances is None:
            return pools
        return f"{_count(self.instances, 'instance')} x {_count(self.cores or 0, 'core')} · {pools}"

    def slug(self) -> str:
        pools = f"intra{_value(self.intra)}-inter{_value(self.inter)}"
        return pools if self.instances is None else f"{self.instances}x{self.cores}cpu-{pools}"

    def threads(self, cpus: int) -> int:
        """Pool threads this setting starts, over all its copies (TF's default is one per
        CPU the process may use)."""
        each = self.cores if self.instances is not None and self.cores else cpus
        pools = sum(each if v in (None, 0) else v for v in (self.intra, self.inter))
        return pools * (self.instances or 1)

    def key(self) -> tuple[int | None, ...]:
        """What tells settings apart: (intra, inter), and the instances when there are."""
        if self.instances is None:
            return (self.intra, self.inter)
        return (self.intra, self.inter, self.instances)

    def to_json(self) -> dict[str, int | None]:
        out = {"intra": self.intra, "inter": self.inter}
        if self.instances is not None:
            out.update(instances=self.instances, cores=self.cores)
        return out


def _value(v: int | None) -> str:
    return "default" if v is None else "0 (default)" if v == 0 else str(v)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def ladder(cpus: int) -> list[int]:
    """1, 2, 4, ... up to the CPU count, the CPU count, and one step beyond it."""
    values = [1]
    while values[-1] * 2 < cpus:
        values.append(values[-1] * 2)
    if values[-1] != cpus:
        values.append(cpus)
    beyond = 2 ** math.ceil(math.log2(cpus + 1))
    values.append(beyond)
    return values


def parse_values(text: str | None, cpus: int, what: str) -> list[int | None]:
    """``"1,2,4"`` or ``"auto"``; None (not given) means: leave this pool alone."""
    if text is None:
        return [None]
    if text.strip() == "auto":
        return list(ladder(cpus))
    values: list[int | None] = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise SweepError(
                f"--{what}: {part!r} is not a number (give e.g. 1,2,4 or auto)"
            ) from None
        if value < 0:
            raise SweepError(f"--{what}: thread counts must be >= 0 (0 = TF's default)")
        if value not in values:
            values.append(value)
    return values


def grid(intra: Sequence[int | None], inter: Sequence[int | None]) -> list[Setting]:
    return [Setting(a, e) for e in inter for a in intra]


def parse_instances(text: str | None, cpus: int) -> list[int] | None:
    """``"1,2,4"``: instance counts, one (a single process on all the CPUs) always first;
    None when not given. Each count must fit the CPUs, one CPU a copy at least."""
    if text is None:
        return None
    counts = [1]
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise SweepError(f"--instances: {part!r} is not a number (give e.g. 1,2,4)") from None
        if value < 1:
            raise SweepError("--instances: counts must be >= 1")
        if value > cpus:
            raise SweepError(
                f"--instances {value}: more copies than the {cpus} CPUs this process may use "
                "(each copy gets its own CPUs)"
            )
        if value not in counts:
            counts.append(value)
    return counts


def shares(cpus: Sequence[int], instances: int) -> list[tuple[int, ...]]:
    """The CPUs split into ``instances`` contiguous equal shares, in order (CPUs left over
    when the count does not divide them stay unused)."""
    ordered = sorted(cpus)
    size = len(ordered) // instances
    return [tuple(ordered[i * size : (i + 1) * size]) for i in range(instances)]


def instance_grid(
    instances: Sequence[int],
    intra: Sequence[int | None],
    inter: Sequence[int | None],
    cpus: int,
) -> list[Setting]:
    """Every instance count with every pool setting; a pool the sweep does not size (None)
    gets one thread per CPU of the copy's share."""
    out: list[Setting] = []
    for k in instances:
        cores = cpus // k
        for e in inter:
            for a in intra:
                setting = Setting(cores if a is None else a, cores if e is None else e, k, cores)
                if setting not in out:
                    out.append(setting)
    return out


def schedule(settings: Sequence[Setting], repeat: int) -> list[tuple[int, Setting]]:
    """Round-robin: every setting once per round."""
    return [(r, s) for r in range(repeat) for s in settings]


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
    # The CPUs this process may use, which settings with instances share out.
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
    cpus: tuple[int, ...] = ()  # the CPUs the copy was pinned to; (): not pinned


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


def timed_run(
    target: Target,
    setting: Setting,
    round_: int,
    path: Path,
    marker: str | None = None,
    keep_script_settings: bool = False,
) -> TimedRun:
    cpu0, t0 = _child_cpu_s(), time.monotonic()
    options = timing_options(
        target, path, setting.env(), marker, keep_script_settings=keep_script_settings
    )
    result = _record(options)
    wall, cpu = time.monotonic() - t0, _child_cpu_s() - cpu0
    return TimedRun(setting, round_, path, wall, cpu, result.manifest, result.exit_code)


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
    alone, pinned to its share of ``cpus``."""
    pinned = tuple(shares(cpus, setting.instances)[0]) if setting.instances and cpus else None
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
                options.target, setting, round_, path, options.marker, options.keep_script_settings
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
