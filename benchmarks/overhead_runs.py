"""One run of the overhead workload under one configuration, and the median's confidence
interval: what ``record_overhead.py`` (whole runs) and ``paired_overhead.py`` (paired chunks)
share. Not a benchmark of its own."""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKLOAD = Path(__file__).resolve().parent / "workloads" / "overhead_workload.py"
RUN_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Config:
    name: str
    record_flags: tuple[str, ...] | None  # None: plain ``python``, not ``tftrace record``
    sources: tuple[str, ...]  # sources the run manifest must show as recorded
    # Not None: plain ``python``, the workload recording itself with ``tftrace.profile``
    # (``--in-code RUN_DIR`` and these flags of its own)
    in_code_flags: tuple[str, ...] | None = None

    @property
    def records(self) -> bool:
        """The run leaves a run directory (and its manifest) behind."""
        return self.record_flags is not None or self.in_code_flags is not None

    def describe(self) -> str:
        if self.in_code_flags is not None:
            pyspy = "--in-code-pyspy" in self.in_code_flags
            return (
                f"python overhead_workload.py --in-code DIR{' --in-code-pyspy' * pyspy}: "
                f"tftrace.profile(DIR, tf_profiler=False, pyspy={pyspy})"
            )
        if self.record_flags is None:
            return "python overhead_workload.py"
        return " ".join(("tftrace record", *self.record_flags))


CONFIGS = (
    Config("plain", None, ()),
    Config("sampler", ("--no-tf-profiler", "--no-pyspy"), ("os_sampler",)),
    Config("sampler+pyspy", ("--no-tf-profiler",), ("os_sampler", "pyspy")),
    Config("tf-profiler", ("--no-pyspy", "--no-sampler"), ("tf_profiler",)),
    Config("all", (), ("tf_profiler", "os_sampler", "pyspy")),
)
# The in-code path (paired mode only): the sampler, and py-spy, in tftrace.profile's helper
IN_CODE_CONFIGS = (
    Config("in-code sampler", None, ("os_sampler",), ()),
    Config("in-code sampler+pyspy", None, ("os_sampler", "pyspy"), ("--in-code-pyspy",)),
)
CONFIG = {c.name: c for c in (*CONFIGS, *IN_CODE_CONFIGS)}


@dataclass
class Run:
    """What one run left: its output, wall time and what its manifest says of the sources."""

    stdout: str
    process_s: float
    recorded_s: float | None = None  # the recording's span (manifest clock), when recorded
    problems: list[str] = field(default_factory=list)  # expected sources that did not record
    source_cpu_s: dict[str, float] = field(default_factory=dict)  # kernel-counted, per source
    source_notes: list[str] = field(default_factory=list)  # samples taken, late ticks, errors


class RunFailed(Exception):
    """A run exited non-zero or printed no result line."""


def run_env() -> dict[str, str]:
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONUNBUFFERED"] = "1"  # as tftrace record sets it for its workload
    return env


def command(config: Config, workload_args: tuple[str, ...], run_dir: Path) -> list[str]:
    workload = [str(WORKLOAD), *workload_args]
    if config.in_code_flags is not None:
        return [sys.executable, *workload, "--in-code", str(run_dir), *config.in_code_flags]
    if config.record_flags is None:
        return [sys.executable, *workload]
    flags = [*config.record_flags, "-o", str(run_dir)]
    return [sys.executable, "-m", "tftrace", "record", *flags, *workload]


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def run_config(config: Config, workload_args: tuple[str, ...], scratch: Path, index: int) -> Run:
    """Run the workload once under ``config``; RunFailed when it exits non-zero."""
    run_dir = scratch / f"run-{index:03d}-{config.name}"
    cmd = command(config, workload_args, run_dir)
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=run_env(), cwd=scratch, timeout=RUN_TIMEOUT_S
    )
    process_s = time.perf_counter() - t0
    try:
        if proc.returncode != 0:
            raise RunFailed(failure(config, cmd, proc))
        if not config.records:
            return Run(proc.stdout, process_s)
        data = read_manifest(run_dir)
        sources = manifest_sources(data)
        return Run(
            proc.stdout,
            process_s,
            recorded_seconds(data),
            source_problems(sources, config.sources),
            source_cpu_seconds(sources),
            source_notes(sources),
        )
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def failure(config: Config, cmd: list[str], proc: subprocess.CompletedProcess[str]) -> str:
    return (
        f"{config.name} run failed (exit {proc.returncode}): {' '.join(cmd)}\n"
        f"--- stdout ---\n{tail(proc.stdout)}\n--- stderr ---\n{tail(proc.stderr)}"
    )


def read_manifest(run_dir: Path) -> dict[str, Any] | str:
    """The run's manifest, or why it could not be read."""
    try:
        data: dict[str, Any] = json.loads((run_dir / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        return f"manifest unreadable: {e}"
    return data


def manifest_sources(data: dict[str, Any] | str) -> dict[str, Any] | str:
    """The manifest's ``sources`` section, or why it could not be read."""
    if isinstance(data, str):
        return data
    if not isinstance(data.get("sources"), dict):
        return "manifest unreadable: no sources section"
    sources: dict[str, Any] = data["sources"]
    return sources


def recorded_seconds(data: dict[str, Any] | str) -> float | None:
    """How long the recording lasted by the manifest's clock (its start to its end): the
    whole ``tftrace record`` run, or the ``tftrace.profile`` block; None when not said."""
    if isinstance(data, str):
        return None
    try:
        clock = data["clock"]
        span = clock["end"]["monotonic_ns"] - clock["start"]["monotonic_ns"]
    except (KeyError, TypeError):
        return None
    return span / 1e9 if isinstance(span, int) and span > 0 else None


def source_problems(sources: dict[str, Any] | str, expected: tuple[str, ...]) -> list[str]:
    """Expected sources that the run's manifest does not show as recorded."""
    if isinstance(sources, str):
        return [sources] if expected else []
    problems = []
    for name in expected:
        status = sources.get(name) or {}
        if status.get("state") != "recorded":
            reason = status.get("reason") or "no reason given"
            problems.append(f"{name} {status.get('state', 'missing')}: {reason}")
    return problems


def source_cpu_seconds(sources: dict[str, Any] | str) -> dict[str, float]:
    """CPU seconds the sampler and py-spy used themselves, as the manifest reports them; the
    sampler's machine readings (part of its own) also apart, as ``os_sampler.machine``."""
    if isinstance(sources, str):
        return {}
    seconds = {
        name: float(status["cpu_seconds"])
        for name, status in sources.items()
        if isinstance(status.get("cpu_seconds"), (int, float))
    }
    machine = (sources.get("os_sampler") or {}).get("machine") or {}
    if isinstance(machine.get("cpu_seconds"), (int, float)):
        seconds["os_sampler.machine"] = float(machine["cpu_seconds"])
    return seconds


def source_notes(sources: dict[str, Any] | str) -> list[str]:
    """The sampler's samples and late ticks, py-spy's samples and errors, when recorded."""
    if isinstance(sources, str):
        return []
    notes = []
    sampler = sources.get("os_sampler") or {}
    if sampler.get("state") == "recorded":
        notes.append(
            f"os_sampler {sampler.get('samples')} samples, {sampler.get('late_ticks')} late"
        )
    pyspy = sources.get("pyspy") or {}
    if pyspy.get("state") == "recorded":
        notes.append(f"py-spy {pyspy.get('samples_line') or 'no samples line'}")
    return notes


def host() -> dict[str, Any]:
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def median_ci(ratios: list[float]) -> tuple[float, float]:
    """The 95 % confidence interval of the median of ``ratios`` (distribution-free, from order
    statistics: scipy's quantile test); NaNs with too few values (fewer than 6)."""
    from scipy.stats import quantile_test

    if len(ratios) < 2:
        return math.nan, math.nan
    ci = quantile_test(ratios, p=0.5).confidence_interval(confidence_level=0.95)
    return float(ci.low), float(ci.high)
