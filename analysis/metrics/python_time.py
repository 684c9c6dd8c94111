"""Which Python: the top Python functions by self and total time, from py-spy's stacks.

``run.python`` holds intervals of one stack per Python thread (``model/pyspy_samples.py``):
py-spy's Chrome trace records a stack when it changes, so an interval runs from the sample that
showed a stack to the next one that showed another. A sample py-spy skips (an idle thread, a
thread whose Python state is gone, such as a TF worker between two ``tf.py_function`` calls, a
failed read) leaves the previous stack open, so an interval can span time the thread spent
blocked. Where the OS sampler ran, only the thread's **active** time counts: the sampling periods
in which it was running or runnable (state R at either end) or gained CPU time, the kernel's
version of py-spy's own "not idle" test. Over a window (lo, hi), per thread py-spy saw (the
main thread first; tftrace's own threads are left out):

- ``sampled_ns``: the thread's intervals clipped to the window and to its active time;
- a function's **self** time: the time it is the innermost frame; its **total** time: the time
  it is anywhere on the stack (counted once per interval, so recursion does not count twice);
- shares are of the thread's ``sampled_ns``; ``self_samples`` is self time x py-spy's rate: how
  many samples that time stands for (the trace keeps stack changes, not each sample).

A function is ``"name (file)"``: py-spy's ``"name (file:line)"`` without the line, which is the
line executing when py-spy first saw the frame and would split one function into many rows. The
frames that start every stack in a recorded run (runpy and tftrace's bootstrap, which run the
script) are dropped, so totals start at the script's ``<module>``.

py-spy's health comes from its own count (the manifest's ``samples_line``, "Samples: S Errors:
E"): S stacks read (one per active thread per tick), E ticks that failed. ``error_share`` is
E / (S + E); above ``HIGH_ERROR_SHARE`` the reason is given.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

TOP_N = 10
HIGH_ERROR_SHARE = 0.10
# Where Python time matters: the breakdown's "python / host" share of the window at least this.
PYTHON_MATTERS_SHARE = 0.20
# The frames that run the workload's script in a recorded run: runpy (frozen since 3.11) and
# tftrace's child bootstrap (tracer/child/bootstrap.py), as (function or None for any, file).
LAUNCHER_FRAMES = (
    (None, "<frozen runpy>"),
    (None, "runpy.py"),
    ("<module>", "bootstrap.py"),
    ("main", "bootstrap.py"),
    ("run_target", "bootstrap.py"),
)
_FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")
# py-spy's counts, as the manifest keeps its last line (18 ASCII digits at most: an int64).
_SAMPLES_LINE = re.compile(r"Samples:\s*([0-9]{1,18})\s+Errors:\s*([0-9]{1,18})\b")
FUNCTION_COLUMNS = (
    "thread",
    "function",
    "self_ns",
    "total_ns",
    "self_share",
    "total_share",
    "self_samples",
)
THREAD_COLUMNS = ("thread", "name", "pool", "sampled_ns", "window_share")


@dataclass(frozen=True)
class PySpyHealth:
    """py-spy's own account of its sampling, and why its error share is high when it is."""

    rate: int | None = None
    nonblocking: bool | None = None
    samples: int | None = None
    errors: int | None = None
    error_share: float | None = None
    high_errors_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PythonTime:
    """The top Python functions per Python thread over a window (see the module's docstring).

    ``functions``: one row per (thread, function) in a thread's top ``TOP_N`` by self or by
    total time, main thread first, then by self time; ``threads``: one row per Python thread
    py-spy sampled in the window; ``note``: why there is nothing, in one line (None when
    py-spy's data is there); ``matters``: whether the window's time is enough Python to show it.
    """

    window: tuple[int, int]
    functions: pd.DataFrame
    threads: pd.DataFrame
    health: PySpyHealth = field(default_factory=PySpyHealth)
    note: str | None = None
    matters: bool = False
    # the breakdown's python share from which Python time is shown: outputs name it
    MATTERS_SHARE: ClassVar[float] = PYTHON_MATTERS_SHARE

    @property
    def present(self) -> bool:
        return self.note is None

    def main_thread(self) -> pd.DataFrame:
        """The main thread's rows (or the first thread's where the main thread was not seen)."""
        if self.threads.empty:
            return self.functions.iloc[0:0]
        return self.functions[self.functions["thread"] == int(self.threads["thread"].iloc[0])]

    def to_json(self) -> dict[str, Any]:
        def records(df: pd.DataFrame) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = df.to_dict(orient="records")
            return [{k: _plain(v) for k, v in r.items()} for r in out]

        return {
            "note": self.note,
            "matters": self.matters,
            "window_ns": list(self.window),
            "py_spy": self.health.to_json(),
            "threads": records(self.threads),
            "functions": records(self.functions),
        }


def _plain(value: Any) -> Any:
    """numpy scalars as Python ones, NaN as None: JSON values."""
    if isinstance(value, np.generic):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def function_of(frame: str) -> tuple[str, str]:
    """``"name (file:line)"`` -> (name, file); a frame of another shape is its own name."""
    match = _FRAME.match(frame)
    return (match[1], match[2]) if match else (frame, "")


def _is_launcher(name: str, file: str) -> bool:
    return any(file == f and (n is None or n == name) for n, f in LAUNCHER_FRAMES)


def stack_functions(stack: str) -> list[str]:
    """The functions of a stack, outermost first, without the launcher's leading frames (the
    innermost frame is always kept)."""
    frames = [function_of(f) for f in stack.split(";") if f]
    start = 0
    while start < len(frames) - 1 and _is_launcher(*frames[start]):
        start += 1
    return [f"{name} ({file})" if file else name for name, file in frames[start:]]


def pyspy_health(run: Run) -> PySpyHealth:
    details = run.manifest.source("pyspy").details
    rate = details.get("rate")
    nonblocking = details.get("nonblocking")
    match = _SAMPLES_LINE.search(str(details.get("samples_line") or ""))
    if match is None:
        return PySpyHealth(rate if isinstance(rate, int) else None, nonblocking)
    samples, errors = int(match[1]), int(match[2])
    share = errors / (samples + errors) if samples + errors else None
    reason = None
    if share is not None and share > HIGH_ERROR_SHARE:
        reason = _high_errors_reason(run, nonblocking)
    return PySpyHealth(
        rate if isinstance(rate, int) else None, nonblocking, samples, errors, share, reason
    )


def _high_errors_reason(run: Run, nonblocking: Any) -> str:
    """Why py-spy failed to read many stacks, from how it sampled and what the run did."""
    if nonblocking:
        return (
            "py-spy read the stacks without pausing the threads (--nonblocking, tftrace's "
            "default), so a stack that changed during a read is an error; busy Python code "
            "changes its stack often. --pyspy-blocking pauses the threads for each read (no "
            "such errors, but 1.2-1.8x slower on TensorFlow processes)"
        )
    workload = run.manifest.workload
    if workload.interrupted or workload.exit_code not in (None, 0):
        return "the workload ended abnormally while py-spy was reading it"
    return (
        "the threads py-spy paused were starting or exiting (short-lived threads fail reads); "
        "a lower --pyspy-rate gives fewer, cleaner reads"
    )


def no_data_reason(run: Run) -> str:
    """One line: why a run has no py-spy stacks."""
    source = run.manifest.source("pyspy")
    if source.state is None:
        return "no py-spy data: py-spy records a live workload (tftrace record), not a bare trace"
    if source.reason:
        return f"no py-spy data: {source.reason}"
    if source.state != "recorded":
        return f"no py-spy data: py-spy {source.state}"
    return "no py-spy data: py-spy saw no Python stack in the trace"


def _thread_rows(run: Run) -> pd.DataFrame:
    """The threads py-spy saw but tftrace's own (main first), with their names."""
    seen = run.threads["thread"].isin(run.python["thread"].unique())
    threads = run.threads[seen & (run.threads["pool"] != Pool.PROFILER.value)].copy()
    threads["is_main"] = threads["pool"] == Pool.PYTHON_MAIN.value
    return threads.sort_values(["is_main", "thread"], ascending=[False, True])


def _name(row: Any) -> str:
    for column in ("python_name", "tf_name", "os_name"):
        value = getattr(row, column)
        if isinstance(value, str) and value:
            return value
    return f"thread {row.thread}"


def active_time(run: Run, thread: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(ends, cumulative active ns at each end) of the OS sampler's periods for ``thread``; a
    period is active when the thread was in state R at either end or gained CPU time in it.
    None without OS samples for the thread."""
    rows = run.samples[run.samples["thread"] == thread].sort_values("t_ns")
    if len(rows) < 2:
        return None
    t = rows["t_ns"].to_numpy()
    running = (rows["state"].astype(str) == "R").to_numpy()
    active = running[:-1] | running[1:] | (np.diff(rows["cpu_ns"].to_numpy()) > 0)
    return t, np.r_[0, np.cumsum(np.diff(t) * active)]


def _active_overlap(
    start: np.ndarray, end: np.ndarray, active: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """ns of each [start, end) inside the active periods (outside the sampled span: none)."""
    t, cumulative = active
    return np.interp(end, t, cumulative) - np.interp(start, t, cumulative)


def _clipped(run: Run, window: tuple[int, int], threads: list[int]) -> pd.DataFrame:
    """Active time per (thread, stack) inside the window."""
    lo, hi = window
    py = run.python[run.python["thread"].isin(threads)]
    start = np.maximum(py["start_ns"].to_numpy(), lo)
    end = np.minimum(py["end_ns"].to_numpy(), np.maximum(hi, start))
    ns = (end - start).astype(np.int64)
    thread_of = py["thread"].to_numpy()
    for thread in np.unique(thread_of):
        active = active_time(run, int(thread))
        if active is not None:
            mine = thread_of == thread
            ns[mine] = _active_overlap(start[mine], end[mine], active).round().astype(np.int64)
    frame = pd.DataFrame({"thread": thread_of, "stack": py["stack"].astype(str), "ns": ns})
    frame = frame[frame["ns"] > 0]
    return frame.groupby(["thread", "stack"], as_index=False, sort=False)["ns"].sum()


def _thread_functions(
    stacks: pd.DataFrame, sampled_ns: int, rate: int | None, top: int
) -> pd.DataFrame:
    self_ns: dict[str, int] = defaultdict(int)
    total_ns: dict[str, int] = defaultdict(int)
    for stack, ns in zip(stacks["stack"], stacks["ns"], strict=True):
        functions = stack_functions(stack)
        self_ns[functions[-1]] += int(ns)
        for function in dict.fromkeys(functions):
            total_ns[function] += int(ns)
    table = pd.DataFrame(
        {
            "function": list(total_ns),
            "self_ns": [self_ns.get(f, 0) for f in total_ns],
            "total_ns": list(total_ns.values()),
        }
    )
    keep = set(table.nlargest(top, "self_ns")["function"]) | set(
        table.nlargest(top, "total_ns")["function"]
    )
    table = table[table["function"].isin(keep)].sort_values(
        ["self_ns", "total_ns", "function"], ascending=[False, False, True]
    )
    table["self_share"] = table["self_ns"] / sampled_ns
    table["total_share"] = table["total_ns"] / sampled_ns
    table["self_samples"] = (table["self_ns"] * (rate or 0) / 1e9).round().astype(np.int64)
    return table


def _empty_functions() -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in FUNCTION_COLUMNS}).astype(
        {"thread": np.int32, "self_ns": np.int64, "total_ns": np.int64, "self_samples": np.int64}
    )


def python_time(
    run: Run, window: tuple[int, int], *, top: int = TOP_N, matters: bool = False
) -> PythonTime:
    """The top ``top`` Python functions per Python thread over ``window`` (see the module).

    ``matters`` is carried as given (``analyze`` decides it from the breakdown and findings).
    """
    health = pyspy_health(run)
    empty_threads = pd.DataFrame({c: [] for c in THREAD_COLUMNS})
    if run.python.empty:
        return PythonTime(
            window, _empty_functions(), empty_threads, health, no_data_reason(run), matters
        )
    threads = _thread_rows(run)
    stacks = _clipped(run, window, threads["thread"].astype(int).tolist())
    sampled = stacks.groupby("thread")["ns"].sum()
    thread_rows, tables = [], []
    width = max(window[1] - window[0], 1)
    for row in threads.itertuples():
        ns = int(sampled.get(row.thread, 0))
        if ns == 0:
            continue
        thread_rows.append((int(row.thread), _name(row), str(row.pool), ns, ns / width))
        table = _thread_functions(stacks[stacks["thread"] == row.thread], ns, health.rate, top)
        tables.append(table.assign(thread=np.int32(row.thread)))
    if not thread_rows:
        note = "no py-spy data: py-spy saw no Python thread inside the window"
        return PythonTime(window, _empty_functions(), empty_threads, health, note, matters)
    functions = pd.concat(tables, ignore_index=True)[list(FUNCTION_COLUMNS)]
    return PythonTime(
        window,
        functions,
        pd.DataFrame(thread_rows, columns=list(THREAD_COLUMNS)),
        health,
        None,
        matters,
    )
