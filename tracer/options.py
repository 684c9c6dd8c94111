"""What to record and how: the recorder's inputs, independent of the command line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_RUNS_DIR = Path("tftrace-runs")
# 100 Hz non-blocking sampling cost <= 5 % of wall time on TF workloads (measured on
# 2 and 16 cores); 50 Hz halves that and still gives 50 samples per second of step.
DEFAULT_PYSPY_RATE = 50
DEFAULT_SAMPLE_HZ = 100.0


@dataclass(frozen=True)
class Target:
    """A script path or a module name, with its arguments (as ``python`` takes them)."""

    kind: str  # "script" | "module"
    value: str
    args: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        head = [self.value] if self.kind == "script" else ["-m", self.value]
        return [*head, *self.args]


@dataclass(frozen=True)
class RecordOptions:
    target: Target
    output: Path | None = None
    name: str | None = None
    tf_profiler: bool = True
    delay_s: float = 0.0
    duration_s: float | None = None
    pyspy: bool = True
    pyspy_rate: int = DEFAULT_PYSPY_RATE
    pyspy_native: bool = False
    pyspy_blocking: bool = False
    pyspy_path: str | None = None
    sampler: bool = True
    sample_hz: float = DEFAULT_SAMPLE_HZ
    # How long the workload may take to flush the profiler after an interrupt.
    stop_grace_s: float = 120.0
