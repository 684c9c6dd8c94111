"""A sweep's arguments, checked before anything runs or is created: the settings (every
combination of the knobs' values, refused when there are too many to time), the baseline,
what to time and by which objective (``session.sweep`` and ``sweep_settings``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.analysis.sweep.timing import Measure, Objective, TimingError, as_objective
from tftrace.tracer.options import DEFAULT_SWEEPS_DIR, RecordOptions, Target
from tftrace.tracer.recorder import RecordError, check_target
from tftrace.tracer.rundir import default_run_path
from tftrace.tracer.safe_files import refuse_link
from tftrace.tracer.sweep import Setting, SweepError, SweepOptions
from tftrace.tracer.sweep_setting import Axes

Values = str | Sequence[int] | None  # "1,2,4", [1, 2, 4], "auto", or None: leave the pool to TF
Baseline = str | tuple[int | None, int | None] | Setting | None
# More settings than this is a sweep no one meant: at 5 rounds of a few seconds a run, 128
# settings already take most of an hour.
MAX_SETTINGS = 128


@dataclass(frozen=True)
class Plan:
    """A sweep's checked arguments."""

    options: SweepOptions
    baseline: Setting
    how: Measure
    warmup_steps: int
    explain: bool
    asked: dict[str, Any]  # sweep.json's "options": the arguments as given
    objective: Objective = Objective.THROUGHPUT
    # The settings in words: how many, which knobs vary, the timed runs they make.
    summary: str = ""


def settings_of(axes: Axes) -> list[Setting]:
    """Every combination of ``axes``, counted first: a product too large to time is refused
    before it is built."""
    count = axes.count()
    if count > MAX_SETTINGS:
        raise SweepError(
            f"{count} settings ({axes.words()}) are too many to time (at most {MAX_SETTINGS}, "
            "each run --repeat times): sweep fewer values"
        )
    return axes.settings()


def summary(settings: Sequence[Setting], repeat: int, varies: str) -> str:
    """``4 settings (intra 1,2 x OMP_NUM_THREADS 1,2), 5 rounds: 20 timed runs``."""
    n = len(settings)
    return (
        f"{n} setting{'s' * (n != 1)} ({varies}), {repeat} round{'s' * (repeat != 1)}: "
        f"{n * repeat} timed runs"
    )


def plan(
    target: Target,
    settings: list[Setting],
    *,
    asked: dict[str, Any],
    repeat: int,
    measure: Measure | str,
    marker: str | None,
    warmup_steps: int,
    baseline: Baseline,
    record_each: bool,
    explain: bool,
    keep_script_settings: bool,
    output: str | os.PathLike[str] | None,
    name: str | None,
    objective: Objective | str = Objective.THROUGHPUT,
    instances: list[int] | None = None,
    cpus: tuple[int, ...] = (),
    varies: str = "",
) -> Plan:
    """Check every argument before anything runs or is created; ``cpus``: the CPUs the
    sweep may use (default: this process's), ``varies``: which knobs vary, in words."""
    if len(settings) > MAX_SETTINGS:
        raise SweepError(f"{len(settings)} settings are too many to time (at most {MAX_SETTINGS})")
    if warmup_steps < 1:
        raise SweepError("--warmup-steps must be >= 1 (the first step traces the function)")
    if repeat < 1:
        raise SweepError("--repeat must be >= 1")
    try:
        how = Measure(measure)
    except ValueError:
        kinds = ", ".join(m.value for m in Measure)
        raise SweepError(f"--measure {measure!r}: give one of {kinds}") from None
    try:
        goal = as_objective(objective)
    except TimingError as e:
        raise SweepError(str(e)) from None
    if marker is not None and how in (Measure.SCRIPT, Measure.PROCESS):
        raise SweepError(f"--marker cannot be used with --measure {how.value}")
    counted = marker is None and how in (Measure.AUTO, Measure.STEPS)
    if goal is not Objective.THROUGHPUT and not counted:
        what = "--marker" if marker is not None else f"--measure {how.value}"
        raise SweepError(
            f"--objective {goal.value} takes percentiles of steps or requests: not with {what}"
        )
    if instances is not None and not counted:
        what = "--marker" if marker is not None else f"--measure {how.value}"
        raise SweepError(f"--instances sums steps or requests per second: not with {what}")
    try:
        check_target(RecordOptions(target=target))
    except RecordError as e:
        raise SweepError(str(e)) from None
    path = Path(output) if output is not None else default_run_path(DEFAULT_SWEEPS_DIR, name)
    refuse_link(path)  # -o DIR, or RUN/verify of a shared run: not through a link
    if path.exists() and any(path.iterdir()):
        raise SweepError(f"output directory is not empty: {path}")
    options = SweepOptions(
        target=target,
        settings=tuple(settings),
        repeat=repeat,
        output=path,
        record_each=record_each,
        marker=marker,
        keep_script_settings=keep_script_settings,
        cpus=cpus or tuple(sorted(os.sched_getaffinity(0))),
    )
    asked = {
        **asked,
        "repeat": repeat,
        "measure": how.value,
        "marker": marker,
        "warmup_steps": warmup_steps,
        "record": record_each,
        "keep_script_settings": keep_script_settings,
        "objective": goal.value,
        "instances": instances,
    }
    words = summary(settings, repeat, varies or "the settings given")
    base = _baseline(baseline, settings)
    return Plan(options, base, how, warmup_steps, explain, asked, goal, words)


def as_text(values: Values) -> str | None:
    """Pool sizes as the command line writes them (and sweep.json keeps them)."""
    if values is None or isinstance(values, str):
        return values
    return ",".join(str(v) for v in values)


def _baseline(wanted: Baseline, settings: list[Setting]) -> Setting:
    """The setting speedups are relative to: the first, the one given, or the first with
    the pool sizes given (whatever its other knobs)."""
    if wanted is None:
        return settings[0]
    if isinstance(wanted, Setting):
        if wanted not in settings:
            raise SweepError(f"--baseline {wanted.label()} is not one of the settings swept")
        return wanted
    if isinstance(wanted, str):
        text = wanted
        try:
            intra, inter = (None if v.strip() in ("", "-") else int(v) for v in text.split(","))
        except ValueError:
            raise SweepError("--baseline takes INTRA,INTER (e.g. 1,1; '-' = not set)") from None
    else:
        intra, inter = wanted
        text = ",".join("-" if v is None else str(v) for v in wanted)
    found = [s for s in settings if (s.intra, s.inter) == (intra, inter)]
    if not found:
        raise SweepError(f"--baseline {text} is not one of the settings swept")
    return found[0]  # with instances: the one process on all the CPUs, which comes first
