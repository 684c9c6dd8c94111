"""A sweep's arguments, checked before anything runs or is created: the settings, the
baseline, what to time and by which objective (``session.sweep`` and ``sweep_settings``)."""

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
from tftrace.tracer.sweep import Setting, SweepError, SweepOptions

Values = str | Sequence[int] | None  # "1,2,4", [1, 2, 4], "auto", or None: leave the pool to TF


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


def plan(
    target: Target,
    settings: list[Setting],
    *,
    asked: dict[str, Any],
    repeat: int,
    measure: Measure | str,
    marker: str | None,
    warmup_steps: int,
    baseline: str | tuple[int | None, int | None] | None,
    record_each: bool,
    explain: bool,
    keep_script_settings: bool,
    output: str | os.PathLike[str] | None,
    name: str | None,
    objective: Objective | str = Objective.THROUGHPUT,
    instances: list[int] | None = None,
    cpus: tuple[int, ...] = (),
) -> Plan:
    """Check every argument before anything runs or is created."""
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
        cpus=cpus,
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
    return Plan(options, _baseline(baseline, settings), how, warmup_steps, explain, asked, goal)


def as_text(values: Values) -> str | None:
    """Pool sizes as the command line writes them (and sweep.json keeps them)."""
    if values is None or isinstance(values, str):
        return values
    return ",".join(str(v) for v in values)


def _baseline(
    wanted: str | tuple[int | None, int | None] | None, settings: list[Setting]
) -> Setting:
    if wanted is None:
        return settings[0]
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
