"""``--steps A:B``: the TF profiler's window given in steps instead of seconds.

Like a Python slice: steps are counted from 0 and B is left out, so ``100:120`` records
steps 100 to 119 (20 steps); ``100:`` runs from step 100 to the end of the workload and
``:20`` from its first step. A step is what the analysis and the step timer call one: an
outermost ``tf.function`` call (or a ConcreteFunction's: a SavedModel signature) or
``tf.profiler.experimental.Trace(..., step_num=...)`` block on the workload's main thread
(calls nested inside one are part of it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tftrace.errors import TftraceError

from .options import RecordOptions

# What the manifest says was counted (its "recording" block).
STEPS_COUNTED = "tf.function calls and Trace(step_num) blocks"
SYNTAX = "A:B, steps counted from 0, B left out (100:120 is steps 100 to 119; 100: to the end)"
_RANGE = re.compile(r"^\s*(-?\d+)?\s*:\s*(-?\d+)?\s*$")

StepRange = tuple[int, int | None]


class StepsError(TftraceError):
    """A steps window that is not A:B with 0 <= A < B (one line for the user)."""


def parse_steps(value: str | Sequence[int | None], label: str = "steps") -> StepRange:
    """``"100:120"``, ``"100:"``, ``":20"`` or a pair ``(100, 120)`` / ``(100, None)`` ->
    ``(first, end)``, ``end`` None for an open end. Raises ``StepsError``, whose message
    starts with ``label`` (the option's name as the caller spelled it)."""
    if isinstance(value, str):
        match = _RANGE.match(value)
        if match is None:
            raise StepsError(f"{label} {value!r}: not {SYNTAX}")
        first_text, end_text = match.groups()
        first = int(first_text) if first_text else 0
        end = int(end_text) if end_text else None
    elif _is_pair(value):
        first, end = value[0] or 0, value[1]
    else:
        raise StepsError(f"{label} {value!r}: not {SYNTAX}, nor a pair (A, B)")
    shown = f"{label} {format_steps((first, end))}"
    if first < 0 or (end is not None and end < 0):
        raise StepsError(f"{shown}: steps are counted from 0, not negative")
    if end is not None and end <= first:
        raise StepsError(
            f"{shown}: the end must come after the start (B is left out: "
            f"{first}:{first + 1} is step {first} alone)"
        )
    return first, end


def _is_pair(value: object) -> bool:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return False
    return all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in value) and (
        value[0] is not None or value[1] is not None
    )


def format_steps(steps: StepRange) -> str:
    """``(100, 120)`` -> ``"100:120"``; ``(100, None)`` -> ``"100:"``."""
    first, end = steps
    return f"{first}:{'' if end is None else end}"


def window_problem(options: RecordOptions) -> str | None:
    """Why ``options.steps`` cannot be used, in one line; None when it can (or is not set)."""
    if options.steps is None:
        return None
    try:
        steps = format_steps(parse_steps(options.steps))
    except StepsError as e:
        return str(e)
    if not options.tf_profiler:
        return f"steps {steps}: the window is the TF profiler's, and it is turned off"
    if options.delay_s or options.duration_s is not None:
        return f"steps {steps} and a delay or duration both set the profiler's window: choose one"
    return None
