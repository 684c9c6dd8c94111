"""What one timed run took: the steady state between its steps, a server's requests, a
marker, or the script.

The rows come from the workload's step timer (``workload/steps.json``): outermost
``tf.function`` (and ``ConcreteFunction``) calls and ``tf.profiler.experimental.Trace``
blocks, each with wall and process-CPU clocks and its thread, and, for an eager loop over a
``tf.data`` dataset with neither, its iterator's ``next()`` calls: the loop's passes. Steady
state is the span from the end of the first step to the end of the last one, so that
tracing, graph building and first-touch warm-up (all in step one) stay out of the comparison.
A marker (``Trace(NAME)`` blocks) is timed in full instead.

A server is timed by its requests: when the steps are on two or more threads (each with at
least ``MIN_CALLS`` of them, as ``analysis/metrics/work.py`` tells a server) whose calls
overlap in time, every outermost call (of every function, on every thread) is a request. Its
window runs from the end of the warm-up (the latest end of any function's first call, or
first ``warmup`` calls) to the end of the last request; its figures are the requests that
started in the window, requests/s (those / the window's seconds) and their latency
percentiles. A function called no more than ``warmup`` times (a set-up or a final export)
has only warm-up calls: it neither serves requests nor moves the window's start. Steps on
one thread, or calls that never overlap, are a loop, timed as above.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.work import is_server
from tftrace.errors import TftraceError


class Measure(str, enum.Enum):
    # marker if given, else step annotations, else tf.function calls, else a tf.data loop's
    # passes, else the script
    AUTO = "auto"
    STEPS = "steps"  # like auto, but fail instead of falling back to the script
    SCRIPT = "script"  # the workload's code, from its first line to its end
    PROCESS = "process"  # the whole process, interpreter start-up included


class Objective(str, enum.Enum):
    """The per-run figure a sweep compares, ranks and recommends by (``--objective``)."""

    THROUGHPUT = "throughput"  # requests (or steps) per second: compared as seconds per one
    P50 = "p50"  # the median latency of the requests (or steps)
    P99 = "p99"  # their 99th percentile latency

    def words(self, server: bool = True) -> str:
        """The measure in words: ``requests/s``, ``steps/s``, ``p50 latency``..."""
        if self is Objective.THROUGHPUT:
            return "requests/s" if server else "steps/s"
        return f"{self.value} latency"


class TimingError(TftraceError):
    """The run cannot be timed the way that was asked (one line for the user)."""


def as_objective(value: Objective | str) -> Objective:
    try:
        return Objective(value)
    except ValueError:
        kinds = ", ".join(o.value for o in Objective)
        raise TimingError(f"--objective {value!r}: give one of {kinds}") from None


PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class Latency:
    """Percentiles of the durations of a span's requests (or steps), in milliseconds: numpy's
    default percentile (linear between the closest ranks)."""

    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, durations_ns: Any) -> Latency | None:
        ms = np.asarray(durations_ns, dtype=float) / 1e6
        if ms.size == 0:
            return None
        p50, p90, p99 = (float(v) for v in np.percentile(ms, PERCENTILES))
        return cls(p50, p90, p99, float(ms.max()))

    def to_row(self) -> dict[str, float]:
        return {
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
        }


LATENCY_COLUMNS = ("p50_ms", "p90_ms", "p99_ms", "max_ms")


@dataclass(frozen=True)
class Timing:
    basis: str  # what was timed, in words
    seconds: float  # the measured span (or, for a marker, the time inside it)
    steps: int | None  # steps (a server's requests) in that span; None when not made of steps
    cpu_seconds: float | None  # the whole process's CPU time over the span
    latency: Latency | None = None  # of those steps or requests; None when not made of them
    server: bool = False  # timed as a server: requests on several threads at once
    # Each step's (request's) duration, which ``latency`` summarizes (copies pool theirs).
    durations_ns: Any = field(default=None, repr=False, compare=False)
    # The span as (start, end) CLOCK_MONOTONIC ns, where it is one span of steps.
    window_ns: tuple[int, int] | None = None

    @property
    def per_unit(self) -> float:
        """Seconds per step (request) when the span is made of steps, else the span itself."""
        return self.seconds / self.steps if self.steps else self.seconds

    @property
    def per_second(self) -> float | None:
        """Steps (requests) per second of the span; None when it is not made of steps."""
        return self.steps / self.seconds if self.steps and self.seconds > 0 else None

    def figure(self, objective: Objective) -> float:
        """The figure a sweep compares, lower is better, in seconds: per request (or step)
        for throughput, else the latency percentile."""
        if objective is Objective.THROUGHPUT:
            return self.per_unit
        if self.latency is None:
            raise TimingError(
                f"--objective {objective.value} needs steps or requests to take percentiles of, "
                f"and this run was timed over {self.basis}"
            )
        return (self.latency.p50_ms if objective is Objective.P50 else self.latency.p99_ms) / 1e3


def _steady(rows: pd.DataFrame, basis: str, warmup: int) -> Timing | None:
    """From the end of the last warm-up step to the end of the last step."""
    rows = rows.sort_values("end_ns")
    if len(rows) <= warmup or len(rows) < 2:
        return None
    first, last = rows.iloc[max(warmup, 1) - 1], rows.iloc[-1]
    if warmup > 1:
        basis += f" after {warmup} warm-up steps"
    steady = rows.iloc[max(warmup, 1) :]
    durations = steady["end_ns"].to_numpy(dtype=np.int64) - steady["start_ns"].to_numpy(np.int64)
    return Timing(
        basis,
        (int(last.end_ns) - int(first.end_ns)) / 1e9,
        len(rows) - max(warmup, 1),
        (int(last.cpu1_ns) - int(first.cpu1_ns)) / 1e9,
        Latency.of(durations),
        durations_ns=durations,
        window_ns=(int(first.end_ns), int(last.end_ns)),
    )


def _server(rows: pd.DataFrame, annotated: bool, warmup: int) -> Timing | None:
    """A server's requests: every row, after each name's first ``warmup`` calls. A name whose
    calls are all warm-up (a function called once, at start-up or at the end) gives no
    request and does not move the window's start."""
    warmup = max(warmup, 1)
    ends, serving = [], []
    for name, calls in rows.sort_values("start_ns", kind="stable").groupby("name", sort=True):
        if len(calls) <= warmup:
            continue
        ends.append(int(calls["end_ns"].iloc[:warmup].max()))
        serving.append(str(name))
    if not serving:
        return None
    start = max(ends)
    mine = rows[rows["name"].astype(str).isin(serving)]
    # the requests that start after the warm-up (one that started before waited for the
    # tracing call: it is warm-up), as the analysis counts them (metrics/requests.py)
    after = mine[mine["start_ns"] >= start].sort_values("end_ns", kind="stable")
    if after.empty:
        return None
    last = after.iloc[-1]
    seconds = (int(last.end_ns) - start) / 1e9
    at_start = mine[mine["end_ns"] == start].iloc[0]
    if annotated:
        what, first = f"Trace({serving[0]!r}, step_num=...) blocks", "the first block"
        if warmup > 1:
            first = f"the first {warmup} blocks"
    else:
        shown = ", ".join(repr(n) for n in serving[:3]) + (", ..." if len(serving) > 3 else "")
        what = f"tf.function {shown} calls"
        first = (
            "each function's first call" if warmup == 1 else f"each function's first {warmup} calls"
        )
    durations = after["end_ns"].to_numpy(dtype=np.int64) - after["start_ns"].to_numpy(np.int64)
    return Timing(
        f"server: {what} on every thread as requests, after {first}",
        seconds,
        len(after),
        (int(last.cpu1_ns) - int(at_start.cpu1_ns)) / 1e9,
        Latency.of(durations),
        server=True,
        durations_ns=durations,
        window_ns=(start, int(last.end_ns)),
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
    """Steady state over ``Trace(..., step_num=)`` blocks, else over tf.function calls, else
    over a tf.data loop's passes on the main thread (``next()`` on its iterator, from the end
    of one to the end of the next); the first ``warmup`` steps (at least one: it traces, or
    starts the pipeline) are left out. Steps on several threads at once are a server's
    requests."""
    annotated = _most_common(steps[(steps["kind"] == "annotation") & steps["step_num"].notna()])
    if annotated is not None:
        name, rows = annotated
        if is_server(rows):
            found = _server(rows, True, warmup)
        else:
            basis = f"steady state over Trace({name!r}, step_num=...) steps"
            found = _steady(rows, basis, warmup)
        if found is not None:
            return found
    calls = steps[steps["kind"] == "tf.function"]
    if is_server(calls):
        found = _server(calls, False, warmup)
        if found is not None:
            return found
    main = steps.attrs.get("main_thread")
    if main is not None and (calls["thread"] == main).any():
        calls = calls[calls["thread"] == main]
    function = _most_common(calls)
    if function is not None:
        name, rows = function
        return _steady(rows, f"steady state over tf.function {name!r} calls", warmup)
    passes = steps[steps["kind"] == "iteration"]
    if main is not None:
        passes = passes[passes["thread"] == main]
    return _steady(
        passes, "steady state over a tf.data loop's passes (next() on the main thread)", warmup
    )


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
            "calls, Trace(..., step_num=) blocks or passes of a tf.data loop "
            "(use --measure script, or --marker NAME)"
        )
    return replace(from_script(report), basis="the whole script (no steps seen)")
