"""Run a workload once per thread setting and round: the recording half of ``tftrace sweep``.

Each run is a fresh process (the pools are sized once per process), sized through
``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS``, with only the step timer inside:
no profiler, sampler or py-spy to disturb what is timed. Rounds interleave the settings
(A B C A B C ...) so that a slow minute of a shared machine lands on every setting alike.
Optionally each setting is also recorded once with every source, for its analysis.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tftrace.errors import TftraceError

from . import rundir
from .environment import POOL_ENV_VARS
from .manifest_reader import Manifest
from .options import RecordOptions, Target
from .recorder import RecordError, RecordResult, record

SWEEP_FILE = "sweep.json"
SWEEP_KIND = "tftrace-sweep"  # sweep.json's "kind": what tells a sweep directory from a run's
TIMED_DIR = "runs"
RECORDED_DIR = "recorded"


class SweepError(TftraceError):
    """A sweep that cannot go on (one line for the user)."""


@dataclass(frozen=True, order=True)
class Setting:
    """Pool sizes for one process; None leaves the pool to TF (and the user's environment)."""

    intra: int | None
    inter: int | None

    def env(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        if self.intra is not None:
            out[POOL_ENV_VARS["intra_op"]] = str(self.intra)
        if self.inter is not None:
            out[POOL_ENV_VARS["inter_op"]] = str(self.inter)
        return out

    def label(self) -> str:
        return f"intra {_value(self.intra)} · inter {_value(self.inter)}"

    def slug(self) -> str:
        return f"intra{_value(self.intra)}-inter{_value(self.inter)}"

    def threads(self, cpus: int) -> int:
        """Pool threads this setting starts (TF's default is one per CPU)."""
        return sum(cpus if v in (None, 0) else v for v in (self.intra, self.inter))

    def to_json(self) -> dict[str, int | None]:
        return {"intra": self.intra, "inter": self.inter}


def _value(v: int | None) -> str:
    return "default" if v is None else "0 (default)" if v == 0 else str(v)


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


@dataclass(frozen=True)
class TimedRun:
    """One timed run as its parent saw it: made here when it runs, re-read by ``load_sweep``,
    timed from its files by ``analysis.sweep.result.time_run``."""

    setting: Setting
    round: int
    path: Path  # its run directory
    wall_s: float  # the process as its parent saw it, start-up included
    cpu_s: float | None  # the process's CPU time, by the kernel's accounting (its rusage)
    manifest: Manifest = field(repr=False)
    exit_code: int = 0  # a sweep keeps only the runs that exited 0


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


def recorded_run(
    target: Target, setting: Setting, path: Path, keep_script_settings: bool = False
) -> RecordResult:
    return _record(
        RecordOptions(
            target=target,
            output=path,
            env=setting.env(),
            echo=False,
            keep_script_settings=keep_script_settings,
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


def run_timed(options: SweepOptions, progress: Progress) -> Iterator[TimedRun]:
    """Every timed run in interleaved order; stops at the first failing run."""
    plan = schedule(options.settings, options.repeat)
    for n, (round_, setting) in enumerate(plan, start=1):
        progress(f"{setting.label()}, round {round_ + 1}/{options.repeat}")
        path = options.output / TIMED_DIR / f"{n:03d}-{setting.slug()}"
        run = timed_run(
            options.target, setting, round_, path, options.marker, options.keep_script_settings
        )
        check_exit(path, run.exit_code, f"{setting.label()} (round {round_ + 1})")
        yield run


def run_recorded(
    options: SweepOptions, settings: Sequence[Setting], progress: Progress
) -> Iterator[tuple[Setting, Path]]:
    for setting in settings:
        progress(f"{setting.label()}, recorded for analysis")
        path = options.output / RECORDED_DIR / setting.slug()
        result = recorded_run(options.target, setting, path, options.keep_script_settings)
        check_exit(path, result.exit_code, f"{setting.label()} (recorded)")
        yield setting, path
