"""What one timed run took: the steady state between its steps, a marker, or the script.

The rows come from the workload's step timer (``workload/steps.json``): outermost
``tf.function`` calls and ``tf.profiler.experimental.Trace`` blocks, each with wall and
process-CPU clocks. Steady state is the span from the end of the first step to the end of
the last one, so that tracing, graph building and first-touch warm-up (all in step one)
stay out of the comparison. A marker (``Trace(NAME)`` blocks) is timed in full instead.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from tftrace.errors import TftraceError


class Measure(str, enum.Enum):
    AUTO = "auto"  # marker if given, else step annotations, else tf.function calls, else script
    STEPS = "steps"  # like auto, but fail instead of falling back to the script
    SCRIPT = "script"  # the workload's code, from its first line to its end
    PROCESS = "process"  # the whole process, interpreter start-up included


class TimingError(TftraceError):
    """The run cannot be timed the way that was asked (one line for the user)."""


@dataclass(frozen=True)
class Timing:
    basis: str  # what was timed, in words
    seconds: float  # the measured span (or, for a marker, the time inside it)
    steps: int | None  # steps in that span; None when the span is not made of steps
    cpu_seconds: float | None  # the whole process's CPU time over the span

    @property
    def per_unit(self) -> float:
        """Seconds per step when the span is made of steps, else the span itself."""
        return self.seconds / self.steps if self.steps else self.seconds


def steps_frame(data: dict[str, Any] | None) -> pd.DataFrame:
    """The step timer's rows as a DataFrame (empty when it recorded nothing)."""
    columns = ["kind", "name", "step_num", "thread", "start_ns", "end_ns", "cpu0_ns", "cpu1_ns"]
    rows = (data or {}).get("rows") or []
    df = pd.DataFrame(rows, columns=(data or {}).get("columns") or columns)
    df.attrs["main_thread"] = (data or {}).get("main_thread")
    return df


def _steady(rows: pd.DataFrame, basis: str, warmup: int) -> Timing | None:
    """From the end of the last warm-up step to the end of the last step."""
    rows = rows.sort_values("end_ns")
    if len(rows) <= warmup or len(rows) < 2:
        return None
    first, last = rows.iloc[max(warmup, 1) - 1], rows.iloc[-1]
    if warmup > 1:
        basis += f" after {warmup} warm-up steps"
    return Timing(
        basis,
        (int(last.end_ns) - int(first.end_ns)) / 1e9,
        len(rows) - max(warmup, 1),
        (int(last.cpu1_ns) - int(first.cpu1_ns)) / 1e9,
    )


def _most_common(rows: pd.DataFrame) -> tuple[str, pd.DataFrame] | None:
    if rows.empty:
        return None
    name = str(rows["name"].value_counts().index[0])
    return name, rows[rows["name"] == name]


def from_marker(steps: pd.DataFrame, marker: str) -> Timing:
    rows = steps[(steps["kind"] == "annotation") & (steps["name"] == marker)]
    if rows.empty:
        raise TimingError(f"the marker Trace({marker!r}) never ran in the workload")
    return Timing(
        f"marker {marker!r} ({len(rows)} block{'s' if len(rows) != 1 else ''})",
        float((rows["end_ns"] - rows["start_ns"]).sum()) / 1e9,
        None,
        float((rows["cpu1_ns"] - rows["cpu0_ns"]).sum()) / 1e9,
    )


def from_steps(steps: pd.DataFrame, warmup: int = 1) -> Timing | None:
    """Steady state over ``Trace(..., step_num=)`` blocks, else over tf.function calls;
    the first ``warmup`` steps (at least one: it traces) are left out."""
    annotated = _most_common(steps[(steps["kind"] == "annotation") & steps["step_num"].notna()])
    if annotated is not None:
        name, rows = annotated
        found = _steady(rows, f"steady state over Trace({name!r}, step_num=...) steps", warmup)
        if found is not None:
            return found
    calls = steps[steps["kind"] == "tf.function"]
    main = steps.attrs.get("main_thread")
    if main is not None and (calls["thread"] == main).any():
        calls = calls[calls["thread"] == main]
    function = _most_common(calls)
    if function is not None:
        name, rows = function
        return _steady(rows, f"steady state over tf.function {name!r} calls", warmup)
    return None


def from_script(report: dict[str, Any]) -> Timing:
    try:
        start = report["code_start_anchor"]["monotonic_ns"]
        end = report["end_anchor"]["monotonic_ns"]
    except (KeyError, TypeError):
        raise TimingError("the workload ended before it could be timed") from None
    cpu0, cpu1 = report.get("code_start_cpu_ns"), report.get("code_end_cpu_ns")
    cpu = (cpu1 - cpu0) / 1e9 if cpu0 is not None and cpu1 is not None else None
    return Timing("the whole script", (end - start) / 1e9, None, cpu)


def measure(
    steps: pd.DataFrame,
    report: dict[str, Any],
    how: Measure,
    marker: str | None = None,
    process: tuple[float, float | None] | None = None,
    warmup: int = 1,
) -> Timing:
    """Time one run. ``process`` is the (wall, CPU) seconds its parent measured."""
    if how is Measure.PROCESS:
        if process is None:
            raise TimingError("the process time was not measured")
        return Timing("the whole process", process[0], None, process[1])
    if how is Measure.SCRIPT:
        return from_script(report)
    if marker is not None:
        return from_marker(steps, marker)
    found = from_steps(steps, warmup)
    if found is not None:
        return found
    if how is Measure.STEPS:
        raise TimingError(
            f"no steady steps seen: the workload ran no more than {max(warmup, 1)} tf.function "
            "calls or Trace(..., step_num=) blocks (use --measure script, or --marker NAME)"
        )
    return replace(from_script(report), basis="the whole script (no steps seen)")
