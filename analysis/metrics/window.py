"""The analysed window: the span of the trace that every figure and finding covers, and why.

What a user asks for (``parse_window``), then where it lies in a run (``resolve_window``):

- ``steady`` (the default): for a server (units of work on several threads at once,
  ``work.py``), from the end of the warm-up (each function's first call, which traces) to
  the end of the last request. Else from the end of the warm-up to the end of the last step. The
  warm-up is the first step (the tf.function call that traces and builds) or the first
  ``warmup_steps``. Without steps, or with none after the warm-up, the whole trace, and the
  basis says so. A run recorded from step A (``tftrace record --steps A:B``) holds only the
  warm-up steps from A on (``in_recording``): none, by default, when A > 0.
- ``all``: the whole trace (first event to last).
- ``A:B``, integers (or a pair ``(A, B)`` from Python): from the start of step A to the end of
  step B, steps numbered from 1; ``A:`` runs to the last step, ``:B`` from the first.
- ``T0:T1``, seconds on the run's time axis (since the recorder started), told from steps by a
  decimal point or an ``s``: ``1.5:3.0``, ``2s:4s``, ``12.5:``; clipped to the trace.

A bad window is a ``TftraceError`` whose one line names the steps or times the run has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.requests import server_window
from tftrace.analysis.metrics.steps import Steps
from tftrace.analysis.metrics.work import SERVER, Work, find_work
from tftrace.analysis.model.run import Run
from tftrace.errors import TftraceError

STEADY, ALL, STEPS, TIMES = "steady", "all", "steps", "times"
SYNTAX = "steady, all, STEP_A:STEP_B (steps from 1, e.g. 2:50) or T0:T1 (seconds, e.g. 1.5:3.0)"
_BOUND = r"\s*(\d+(?:\.\d*)?|\.\d+)?\s*(s?)\s*"
_RANGE = re.compile(f"^{_BOUND}:{_BOUND}$")


@dataclass(frozen=True)
class WindowSpec:
    """A window as asked for: ``mode`` (steady, all, steps, times), the first and last step
    (steps) or seconds (times), None for an open end; and the warm-up steps of ``steady``
    in the trace, after the ``recorded_from`` steps of the workload before its recording."""

    mode: str = STEADY
    first: float | None = None
    last: float | None = None
    warmup_steps: int = 1
    recorded_from: int = 0

    def __str__(self) -> str:
        if self.mode in (STEADY, ALL):
            return self.mode
        ends = ["" if v is None else f"{v:g}" for v in (self.first, self.last)]
        unit = "s" if self.mode == TIMES else ""
        return ":".join(e + unit if e else e for e in ends)


WindowArg = str | tuple[int, int] | WindowSpec | None


def parse_window(window: WindowArg = STEADY, warmup_steps: int = 1) -> WindowSpec:
    """``"steady"``, ``"all"``, ``"A:B"`` (steps), ``"T0:T1"`` (seconds) or ``(A, B)``."""
    if warmup_steps < 0:
        raise TftraceError(f"warm-up steps must be 0 or more, not {warmup_steps}")
    if isinstance(window, WindowSpec):
        return window
    if window is None or (isinstance(window, str) and window.strip().lower() == STEADY):
        return WindowSpec(STEADY, warmup_steps=warmup_steps)
    if isinstance(window, tuple):
        if len(window) != 2 or not all(isinstance(v, int) for v in window):
            raise TftraceError(f"window {window!r}: a pair must be two step numbers")
        return _checked(WindowSpec(STEPS, window[0], window[1], warmup_steps), str(window))
    text = str(window).strip().lower()
    if text == ALL:
        return WindowSpec(ALL, warmup_steps=warmup_steps)
    match = _RANGE.match(text)
    if match is None or (match.group(1) is None and match.group(3) is None):
        raise TftraceError(f"window {window!r}: not one of {SYNTAX}")
    first, unit0, last, unit1 = match.groups()
    timed = bool(unit0 or unit1) or "." in text
    number = float if timed else int
    spec = WindowSpec(
        TIMES if timed else STEPS,
        None if first is None else number(first),
        None if last is None else number(last),
        warmup_steps,
    )
    return _checked(spec, text)


def in_recording(spec: WindowSpec, run: Run) -> WindowSpec:
    """``spec`` for ``run``: a run recorded from step A (``--steps A:B``, counted from 0)
    began after the workload's first A steps, so the trace holds only the warm-up steps from
    A on, and every recorded step is in the steady window when A >= ``warmup_steps``."""
    steps = run.manifest.recording.steps
    if not steps or not steps[0]:
        return spec
    left = max(spec.warmup_steps - steps[0], 0)
    return replace(spec, warmup_steps=left, recorded_from=steps[0])


def _checked(spec: WindowSpec, text: str) -> WindowSpec:
    if spec.mode == STEPS and any(v is not None and v < 1 for v in (spec.first, spec.last)):
        raise TftraceError(f"window {text}: steps are numbered from 1")
    if spec.first is not None and spec.last is not None and spec.first > spec.last:
        raise TftraceError(f"window {text}: it ends before it starts")
    return spec


def steps_text(steps: Steps, first: int, last: int) -> str:
    """``steps 2-50 of 50 (tf.function multi_step_on_iterator)``."""
    span = f"{first}" if first == last else f"{first}-{last}"
    return f"step{'s' if first != last else ''} {span} of {steps.found} ({steps.source})"


def resolve_window(run: Run, steps: Steps, spec: WindowSpec) -> tuple[tuple[int, int], str]:
    """(start, end) ns of the window on the run's axis, and its basis: one line saying what
    it is and why (``steady: steps 2-6 of 6 (tf.function train_step), after 1 warm-up step``).

    ``steps`` are the steps of the whole trace (``find_steps(run)``)."""
    lo, hi = trace_window(run)
    table = steps.table
    n = len(table)
    if spec.mode == ALL:
        return (lo, hi), "all: the whole trace"
    if spec.mode == STEADY:
        work = find_work(run)
        if work.shape == SERVER:
            return _server_span(run, work, spec)
        if n == 0:
            why = "no steps found (no tf.function or annotation repeated on the main thread)"
            return (lo, hi), f"all: {why}, so the whole trace"
        if n <= spec.warmup_steps:
            return (lo, hi), (
                f"all: {steps_text(steps, 1, n)} found, none after the warm-up of "
                f"{spec.warmup_steps}, so the whole trace"
            )
        warm = spec.warmup_steps
        # the steady state starts where the warm-up ends: the gap before the next step is in it
        start = table["end_ns"].iloc[warm - 1] if warm else table["start_ns"].iloc[0]
        after = f"after {warm} warm-up step{'s' * (warm != 1)}" if warm else "no warm-up left out"
        if spec.recorded_from and not warm:
            after = f"the warm-up was before step {spec.recorded_from}, where the recording began"
        return (int(start), int(table["end_ns"].iloc[-1])), (
            f"steady: {steps_text(steps, warm + 1, n)}, {after}"
        )
    if spec.mode == STEPS:
        first, last = int(spec.first or 1), int(spec.last or n)
        # "steps 3-3" rather than "step 3": the basis starts with its mode
        return _step_span(steps, spec), f"steps {first}-{last} of {steps.found} ({steps.source})"
    return _time_span(run, spec)


def _server_span(run: Run, work: Work, spec: WindowSpec) -> tuple[tuple[int, int], str]:
    """A server's steady state: from the end of its warm-up (each function's first calls) to
    the end of the last request."""
    span = server_window(work, max(spec.warmup_steps, 1))
    what = f"{work.source} on {work.threads} threads"
    if span is None:
        lo, hi = trace_window(run)
        return (lo, hi), f"all: a server ({what}) with no request after its warm-up"
    units = work.units
    n = int(((units["start_ns"] >= span[0]) & (units["start_ns"] < span[1])).sum())
    calls = "call" if spec.warmup_steps <= 1 else f"{spec.warmup_steps} calls"
    return span, (
        f"server: {n} requests of {len(units)} ({what}), from the end of the warm-up "
        f"(each function's first {calls}, which trace{'s' * (spec.warmup_steps <= 1)}) "
        "to the last request"
    )


def _step_span(steps: Steps, spec: WindowSpec) -> tuple[int, int]:
    n = len(steps.table)
    if n == 0:
        raise TftraceError(
            f"window {spec}: this run has no steps (no tf.function or annotation repeated on "
            "the main thread); use all or T0:T1 in seconds"
        )
    first, last = int(spec.first or 1), int(spec.last or n)
    if last > n or first > n:
        raise TftraceError(f"window {spec}: the run has {steps_text(steps, 1, n)}")
    table = steps.table
    return int(table["start_ns"].iloc[first - 1]), int(table["end_ns"].iloc[last - 1])


def _time_span(run: Run, spec: WindowSpec) -> tuple[tuple[int, int], str]:
    lo, hi = trace_window(run)
    start = lo if spec.first is None else round(spec.first * 1e9)
    end = hi if spec.last is None else round(spec.last * 1e9)
    clipped = max(start, lo), min(end, hi)
    if clipped[1] <= clipped[0]:
        raise TftraceError(
            f"window {spec}: the trace spans {lo / 1e9:.3f}s:{hi / 1e9:.3f}s on the run's axis"
        )
    note = ", clipped to the trace" if clipped != (start, end) else ""
    return clipped, f"times {clipped[0] / 1e9:.3f}-{clipped[1] / 1e9:.3f} s{note}"
