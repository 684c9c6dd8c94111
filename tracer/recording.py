"""``record(script, args)``: the library call behind ``tftrace record``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tftrace.tracer.options import RecordOptions, Target, as_target
from tftrace.tracer.recorder import RecordError, RecordResult
from tftrace.tracer.recorder import record as _record_with
from tftrace.tracer.step_range import StepsError, parse_steps


def record(
    target: Target | str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    output: str | os.PathLike[str] | None = None,
    name: str | None = None,
    tf_profiler: bool = True,
    delay_s: float = 0.0,
    duration_s: float | None = None,
    steps: str | tuple[int, int | None] | None = None,
    pyspy: bool = True,
    sampler: bool = True,
    env: Mapping[str, str | None] | None = None,
    echo: bool = True,
    **options: Any,
) -> RecordResult:
    """Run a workload under the TF profiler, py-spy and the OS thread sampler; write one run
    directory (also a TensorBoard log directory) and return what happened.

    The workload runs in a fresh child process of this interpreter, exactly as ``python``
    would run it (argv, ``__name__``, working directory, its own threading settings).

    Args:
        target: a script's path, or a ``Target`` (``Target("module", "pkg.mod")`` for
            ``python -m pkg.mod``).
        args: the workload's own command-line arguments.
        output: the run directory to create (default: a new one under ``./tftrace-runs/``).
        name: a label kept in the manifest and in the default directory's name.
        tf_profiler, pyspy, sampler: turn a source off with False.
        delay_s, duration_s: profile a window of the run instead of all of it (seconds
            counted from the workload's own start).
        steps: profile steps A to B-1 only, ``(A, B)`` or ``"A:B"``, like a Python slice
            (counted from 0, B left out; ``(A, None)`` or ``"A:"`` to the end). A step is an
            outermost ``tf.function`` call or ``tf.profiler.experimental.Trace(...,
            step_num=...)`` block on the main thread. Not with ``delay_s``/``duration_s``.
        env: variables set (or, with None, removed) in the workload's environment, e.g.
            ``{"TF_NUM_INTRAOP_THREADS": "2"}``.
        echo: stream the workload's output to this process's stdout/stderr (it is kept in
            the run directory either way).
        options: any other field of ``tftrace.tracer.options.RecordOptions``
            (``pyspy_rate``, ``sample_hz``, ``pyspy_native``, ...).

    Returns:
        A ``RecordResult``: ``run.path`` (the run directory), ``exit_code`` (the workload's)
        and ``manifest``.

    Raises:
        RecordError (a ``TftraceError``): the script or module does not exist, TensorFlow
        cannot be imported, the run directory cannot be created, or ``steps`` is not A:B
        with 0 <= A < B or comes with ``delay_s``/``duration_s``. A workload that fails is
        not an error: its exit code is returned and what was recorded is kept.

    Example::

        import tftrace

        result = tftrace.record("examples/eager_matmul.py", ["--size", "1000"], echo=False)
        analysis = tftrace.analyze(tftrace.load(result.run.path))
    """
    try:
        step_window = parse_steps(steps) if steps is not None else None
    except StepsError as e:
        raise RecordError(str(e)) from None
    return _record_with(
        RecordOptions(
            target=as_target(target, args),
            output=Path(output) if output is not None else None,
            name=name,
            tf_profiler=tf_profiler,
            delay_s=delay_s,
            duration_s=duration_s,
            steps=step_window,
            pyspy=pyspy,
            sampler=sampler,
            env=dict(env or {}),
            echo=echo,
            **options,
        )
    )
