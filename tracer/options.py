"""What to record and how: the recorder's inputs, independent of the command line."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_RUNS_DIR = Path("tftrace-runs")
DEFAULT_SWEEPS_DIR = Path("tftrace-sweeps")
DEFAULT_SWEEP_REPEAT = 5  # timed runs per setting
# A verification tests one claim with a one-sided U test: at 7 runs each, one disturbed run
# cannot hide a real difference (at 5 it can). See analysis/sweep/stats.py.
DEFAULT_VERIFY_REPEAT = 7
# py-spy's own CPU, measured by the kernel on a 2-core machine: 2.4-5.2 % of one core at
# 50 Hz non-blocking, taken from a workload that uses every core. 20 Hz (a sample per 50 ms
# of Python) keeps it near 1-2 % of a core.
DEFAULT_PYSPY_RATE = 20
DEFAULT_SAMPLE_HZ = 100.0
# The OS sampler's readings of the machine beside the workload (CPUs, other processes, the
# cgroup): a few a second place another process's CPU time within 0.2 s.
DEFAULT_MACHINE_HZ = 5.0


@dataclass(frozen=True)
class Target:
    """A workload as ``python`` takes it: a script's path or a module's name, with its arguments.

    ``kind`` is ``"script"`` (``python train.py --epochs 1``) or ``"module"``
    (``python -m pkg.train --epochs 1``); ``value`` the path or module name; ``args`` the
    workload's own arguments. ``tftrace.record`` and ``tftrace.sweep`` take a Target or,
    for a script, just its path.

    Example::

        tftrace.record(tftrace.Target("module", "pkg.train", ("--epochs", "1")))
    """

    kind: str  # "script" | "module" | "code" (a block recorded in code: tftrace.profile)
    value: str
    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        head = ["-m", self.value] if self.kind == "module" else [self.value]
        return [*head, *self.args]


def as_target(target: Target | str | os.PathLike[str], args: Sequence[str] = ()) -> Target:
    """A workload given as a ``Target``, or as a script's path: ``args`` follow its own."""
    if isinstance(args, str):  # a tuple of its characters is never what was meant
        raise TypeError("args: give a list of arguments, not one string")
    if isinstance(target, Target):
        return Target(target.kind, target.value, (*target.args, *args))
    return Target("script", os.fspath(target), tuple(args))


@dataclass(frozen=True)
class RecordOptions:
    target: Target
    output: Path | None = None
    name: str | None = None
    tf_profiler: bool = True
    delay_s: float = 0.0
    duration_s: float | None = None
    # The profiler's window in steps instead (step_range.py): steps first..end-1, counted
    # from 0; end None to run to the end. Not with delay_s / duration_s.
    steps: tuple[int, int | None] | None = None
    pyspy: bool = True
    pyspy_rate: int = DEFAULT_PYSPY_RATE
    pyspy_native: bool = False
    pyspy_blocking: bool = False
    pyspy_path: str | None = None
    sampler: bool = True
    sample_hz: float = DEFAULT_SAMPLE_HZ
    machine_hz: float = DEFAULT_MACHINE_HZ  # 0: no machine readings
    # How long the workload may take to flush the profiler after an interrupt.
    stop_grace_s: float = 120.0
    thread_identity: bool = True
    # Time tf.function calls and Trace blocks inside the workload (for sweeps; a profiled
    # window times them too: ``times_steps``).
    step_timer: bool = False
    step_marker: str | None = None  # the Trace(NAME) blocks the step timer also keeps
    # Apply the workload's own tf.config.threading setter calls (a sweep records them only).
    keep_script_settings: bool = True
    # Variables set (or, with None, removed) in the workload's environment.
    env: Mapping[str, str | None] = field(default_factory=dict)
    # Pin the workload to these CPUs from its start (before TF sizes its pools by them);
    # None: it may use the CPUs this process may use.
    cpu_affinity: tuple[int, ...] | None = None
    # Stream the workload's output to our terminal (it is kept in the run either way).
    echo: bool = True

    @property
    def times_steps(self) -> bool:
        """Whether the workload times its steps (``workload/steps.json``): asked for, or the
        profiler over a window, so that the steps outside it measure the profiler's own cost
        (``analysis/metrics/profiler_cost.py``). Two clock reads a step, ~6 us inside TF."""
        windowed = self.steps is not None or self.delay_s > 0 or self.duration_s is not None
        return self.step_timer or (self.tf_profiler and windowed)
