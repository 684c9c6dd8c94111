"""Who else held the process's cores: other processes, the hypervisor (steal) and the cgroup's
CPU quota (throttling), over a window, from the OS sampler's machine readings.

Counters are cumulative and read a few times a second; figures in a window are their growth,
linear between readings (as ``cpu_time.py`` does for threads). Other processes' CPU on the
usable CPUs is the CPUs' busy time (``/proc/stat``) less the process's own CPU time, so it
needs no per-process reading to be exact; the per-process table (``/proc/<pid>/stat``, read at
a lower rate) names who it was, and places each process on the usable CPUs by the CPU it was
last seen on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.cpu_time import process_cumulative
from tftrace.analysis.model.counters import from_birth, growth, interval_growth, without_resets
from tftrace.analysis.model.run import Run

# tftrace's own processes (the recorder, py-spy) are named apart: they are the cost of
# measuring, not a neighbour the user can move.
OWN_ROLES = ("recorder",)


@dataclass(frozen=True)
class Contention:
    """The usable CPUs' time over ``window`` by who held it.

    ``own_core_s``: this process's CPU; ``others_core_s``: every other process on the usable
    CPUs (``tftrace_core_s`` of it tftrace's own recorder and py-spy); ``steal_core_s``: time
    the hypervisor ran something else on those CPUs; ``throttled_core_s``: the cgroup's
    throttled time (summed over its CPUs, as ``cpu.stat`` counts it) with its periods.
    ``processes``: pid, name, role, core_s, for processes that ran on the usable CPUs, most
    first. ``grid`` and the per-interval ``others_ns``/``steal_ns``/``throttled_ns`` let the
    headline split run-queue wait interval by interval.
    """

    window: tuple[int, int]
    cpus: tuple[int, ...]
    own_core_s: float
    others_core_s: float
    tftrace_core_s: float
    steal_core_s: float
    throttled_core_s: float
    periods: int
    throttled_periods: int
    quota: float | None
    processes: pd.DataFrame
    grid: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    others_ns: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    steal_ns: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    throttled_ns: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    @property
    def seconds(self) -> float:
        return (self.window[1] - self.window[0]) / 1e9

    @property
    def neighbours_core_s(self) -> float:
        """Other processes' core-time, tftrace's own left out. The two come from different
        readings (the CPUs' busy time, the per-process table read less often), so near zero
        their difference can fall below it; no process ran less than nothing."""
        return max(self.others_core_s - self.tftrace_core_s, 0.0)

    def held_on(self, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(other processes, steal, throttling) core-ns over each interval of ``grid``, the
        readings' intervals spread evenly over their time."""

        def spread(per_interval: np.ndarray) -> np.ndarray:
            if len(self.grid) < 2:
                return np.zeros(max(len(grid) - 1, 0))
            return interval_growth(self.grid, np.r_[0.0, np.cumsum(per_interval)], grid)

        return spread(self.others_ns), spread(self.steal_ns), spread(self.throttled_ns)

    def to_json(self) -> dict[str, Any]:
        return {
            "cpus": list(self.cpus),
            "own_core_s": round(self.own_core_s, 6),
            "others_core_s": round(self.others_core_s, 6),
            "tftrace_core_s": round(self.tftrace_core_s, 6),
            "steal_core_s": round(self.steal_core_s, 6),
            "throttled_core_s": round(self.throttled_core_s, 6),
            "periods": self.periods,
            "throttled_periods": self.throttled_periods,
            "quota_cpus": self.quota,
            "processes": [
                {
                    "pid": int(r.pid),
                    "name": str(r.name),
                    "role": str(r.role),
                    "core_s": round(float(r.core_s), 6),
                }
                for r in self.processes.itertuples()
            ],
        }


def _usable(cpus: pd.DataFrame, usable: tuple[int, ...]) -> pd.DataFrame:
    return cpus[cpus["cpu"].isin(usable)] if usable else cpus


def _summed(frame: pd.DataFrame, column: str, grid: np.ndarray) -> np.ndarray:
    """Σ over CPUs of a cumulative per-CPU counter's growth per interval of ``grid``."""
    total = np.zeros(max(len(grid) - 1, 0))
    for _, one in frame.groupby("cpu", sort=False):
        total += interval_growth(one["t_ns"].to_numpy(), one[column].to_numpy(), grid)
    return total


def _reading_grid(cpus: pd.DataFrame, lo: int, hi: int) -> np.ndarray:
    times = np.unique(cpus["t_ns"].to_numpy(np.int64))
    return np.unique(np.r_[lo, times[(times > lo) & (times < hi)], hi]).astype(np.int64)


def _births(names: pd.DataFrame) -> dict[int, int]:
    if "started_ns" not in names:
        return {}
    known = names.dropna(subset=["started_ns"])
    return {int(p): int(t) for p, t in zip(known["pid"], known["started_ns"], strict=True)}


def process_table(
    processes: pd.DataFrame, names: pd.DataFrame, usable: tuple[int, ...], lo: int, hi: int
) -> pd.DataFrame:
    """Per process: its CPU time in [lo, hi] on the usable CPUs (each reading's growth placed
    on the CPU the process was last seen on; a process born between readings counted from 0
    at its birth, ``names``' ``started_ns``), most first; processes with none left out."""
    born = _births(names)
    rows = []
    for pid, one in processes.groupby("pid", sort=False):
        read = one["t_ns"].to_numpy(np.int64)
        # a pid taken by a new process between readings: its count starts again
        cpu_ns = without_resets(one["cpu_ns"].to_numpy())
        t, cpu = from_birth(read, cpu_ns, born.get(int(pid)))
        edges = np.unique(np.r_[lo, t[(t > lo) & (t < hi)], hi]).astype(np.int64)
        grown = interval_growth(t, cpu, edges)
        # each interval on the CPU of the reading that ends it (before its birth: its first)
        where = np.clip(np.searchsorted(read, edges[1:], side="left"), 0, len(read) - 1)
        on_usable = one["processor"].to_numpy()[where]
        if usable:
            grown = grown[np.isin(on_usable, usable)]
        if grown.sum() > 0:
            rows.append((int(pid), float(grown.sum()) / 1e9))
    table = pd.DataFrame(rows, columns=["pid", "core_s"])
    named = names.drop_duplicates("pid").set_index("pid") if not names.empty else None
    table["name"] = [
        str(named.at[p, "name"]) if named is not None and p in named.index else "?"
        for p in table["pid"]
    ]
    table["role"] = [
        str(named.at[p, "role"]) if named is not None and p in named.index else "other"
        for p in table["pid"]
    ]
    return (
        table[["pid", "name", "role", "core_s"]]
        .sort_values("core_s", ascending=False)
        .reset_index(drop=True)
    )


def contention(
    cpus: pd.DataFrame,
    processes: pd.DataFrame,
    names: pd.DataFrame,
    cgroup: pd.DataFrame,
    own_cpu_ns: Callable[[np.ndarray], np.ndarray],
    window: tuple[int, int],
    usable: tuple[int, ...],
    quota: float | None = None,
) -> Contention | None:
    """Who held the usable CPUs over ``window``; None without per-CPU readings in it.

    ``cpus``: t_ns, cpu, busy_ns, steal_ns (cumulative, /proc/stat); ``processes``: t_ns,
    pid, cpu_ns, processor; ``names``: pid, name, role; ``cgroup``: t_ns, periods,
    throttled_periods, throttled_ns (cumulative, cpu.stat); ``own_cpu_ns``: the process's
    cumulative CPU ns, summed over its threads, at given times.
    """
    lo, hi = window
    mine = _usable(cpus, usable)
    if mine.empty or hi <= lo or mine["t_ns"].max() <= lo or mine["t_ns"].min() >= hi:
        return None
    grid = _reading_grid(mine, lo, hi)
    busy = _summed(mine, "busy_ns", grid)
    steal = _summed(mine, "steal_ns", grid)
    own = np.maximum(np.diff(own_cpu_ns(grid)), 0.0)
    others = np.maximum(busy - own, 0.0)
    throttled = np.zeros(len(grid) - 1)
    periods = throttled_periods = 0
    if not cgroup.empty:
        t = cgroup["t_ns"].to_numpy()
        throttled = interval_growth(t, cgroup["throttled_ns"].to_numpy(), grid)
        periods, throttled_periods = (
            round(growth(t, cgroup[c].to_numpy(), lo, hi)) for c in ("periods", "throttled_periods")
        )
    table = process_table(processes, names, usable, lo, hi)
    tftrace_s = float(table.loc[table["role"].isin(OWN_ROLES), "core_s"].sum())
    return Contention(
        window,
        tuple(sorted(int(c) for c in mine["cpu"].unique())),
        own_core_s=float(own.sum()) / 1e9,
        others_core_s=float(others.sum()) / 1e9,
        tftrace_core_s=tftrace_s,
        steal_core_s=float(steal.sum()) / 1e9,
        throttled_core_s=float(throttled.sum()) / 1e9,
        periods=periods,
        throttled_periods=throttled_periods,
        quota=quota,
        processes=table,
        grid=grid,
        others_ns=others,
        steal_ns=steal,
        throttled_ns=throttled,
    )


def split_run_queue(
    queued_ns: np.ndarray,
    others_ns: np.ndarray,
    steal_ns: np.ndarray,
    throttled_ns: np.ndarray,
) -> dict[str, np.ndarray]:
    """The process's run-queue wait on idle-to-it cores, per interval, by who held them:
    throttling first (a throttled group waits with cores free), then other processes and
    steal in proportion to the core-time each took, and the rest the process's own (its
    threads outnumbered the cores it could get, or waited to be balanced onto a free one)."""
    quota = np.minimum(queued_ns, throttled_ns)
    rest = queued_ns - quota
    held = others_ns + steal_ns
    taken = np.minimum(rest, held)
    share = np.divide(others_ns, held, out=np.zeros_like(held), where=held > 0)
    return {
        "quota": quota,
        "other_processes": taken * share,
        "steal": taken * (1 - share),
        "run_queue": rest - taken,
    }


def _known(cgroup: pd.DataFrame) -> pd.DataFrame:
    """The cgroup readings, empty where the cgroup keeps no throttling counts (-1)."""
    needed = ["periods", "throttled_periods", "throttled_ns"]
    if cgroup.empty or (cgroup[needed] < 0).any(axis=None):
        return cgroup.iloc[:0]
    return cgroup


def contention_of(run: Run, window: tuple[int, int]) -> Contention | None:
    """Who held ``run``'s usable CPUs over ``window``; None without machine readings or the
    process's own thread samples."""
    machine = run.machine
    if not machine.recorded or run.samples.empty:
        return None
    quota = machine.cgroup_info.get("quota_cpus") or run.manifest.host.cpu_quota
    return contention(
        machine.cpus,
        machine.processes,
        machine.process_names[["pid", "name", "role", "started_ns"]],
        _known(machine.cgroup),
        lambda grid: process_cumulative(run, "cpu_ns", grid),
        window,
        tuple(run.manifest.host.cpu_affinity),
        quota=float(quota) if quota else None,
    )
