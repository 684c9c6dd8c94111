"""The census of a process's threads against its CPU budget: every thread in its pool, each
pool's size and where it came from, and what each pool used of the CPUs over the window.

The CPU figures are the kernel's (the OS sampler's cumulative schedstat counters,
interpolated at the window's edges as ``cpu_time.py`` does), so they see the pools the trace
does not: a NumPy product's OpenBLAS workers write no trace event. A pool's **threads on a
CPU** = its CPU seconds / the window's seconds; their sum over the pools is the process's busy
cores (``core_use.py``), set against the usable CPUs. The same per bin of time is the series a
plot stacks against the CPUs line. Which pool a thread counts in, and the pools' sizes:
``census_pools.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import merged_busy
from tftrace.analysis.metrics.census_pools import (
    POOLS,
    UNKNOWN,
    census_pools,
    last_report,
    pool_sizes,
)
from tftrace.analysis.metrics.cpu_time import counter_at
from tftrace.analysis.model.run import Run
from tftrace.tracer.child.thread_libraries import read_thread_libraries

# Bins of the series: 100 ms (10 samples at the sampler's default 100 Hz), narrower for a short
# window so that it keeps 20 bins, never under 20 ms (2 samples), never more than 400 bins.
SERIES_RESOLUTION_NS = 100_000_000
MIN_RESOLUTION_NS = 20_000_000
MIN_BINS, MAX_BINS = 20, 400
COLUMNS = ["pool", "threads", "size", "source", "cpu_s", "on_cpu", "wait_s", "traced_busy"]


@dataclass(frozen=True)
class Census:
    """Threads by pool over ``window``, against ``cpus`` usable CPUs.

    ``table``: one row per pool with threads (``COLUMNS``): ``threads`` (known from any
    source), ``size`` (configured, where known) and its ``source`` in words, ``cpu_s`` and
    ``wait_s`` (the kernel's CPU and run-queue wait seconds), ``on_cpu`` (mean threads on a
    CPU = cpu_s / window seconds) and ``traced_busy`` (mean threads owning work by the trace;
    NaN for a pool without trace lines). CPU columns are NaN without the OS sampler.
    ``series``: threads on a CPU per pool in bins of ``resolution_ns`` (``t_ns`` the bin's
    start, ``t_s`` since the window's start; one column per pool of the table).
    ``libraries``: what threadpoolctl reported (``thread_libraries.json``), as recorded.
    """

    window: tuple[int, int]
    table: pd.DataFrame
    series: pd.DataFrame
    resolution_ns: int
    cpus: int | None
    cpus_basis: str
    sampled: bool
    libraries: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def seconds(self) -> float:
        return (self.window[1] - self.window[0]) / 1e9

    @property
    def threads(self) -> int:
        return int(self.table["threads"].sum())

    @property
    def sized_threads(self) -> int:
        """The known pool sizes added up: the threads the settings ask to run at once."""
        return int(self.table["size"].dropna().sum())

    @property
    def on_cpu(self) -> float | None:
        """Threads on a CPU on average, all pools: the process's busy cores."""
        return float(self.table["on_cpu"].sum()) if self.sampled else None

    @property
    def peak_on_cpu(self) -> float | None:
        """The most threads on a CPU in one bin of the series."""
        pools = [c for c in self.series.columns if c not in ("t_ns", "t_s")]
        if not self.sampled or self.series.empty or not pools:
            return None
        return float(self.series[pools].sum(axis=1).max())

    def sized_pools(self) -> list[tuple[str, int]]:
        return [(str(r.pool), int(r.size)) for r in self.table.itertuples() if pd.notna(r.size)]

    def to_json(self) -> dict[str, Any]:
        def number(value: Any, digits: int = 4) -> float | None:
            return None if pd.isna(value) else round(float(value), digits)

        pools = [
            {
                "pool": str(r.pool),
                "threads": int(r.threads),
                "size": None if pd.isna(r.size) else int(r.size),
                "source": str(r.source),
                "cpu_s": number(r.cpu_s, 6),
                "on_cpu": number(r.on_cpu),
                "wait_s": number(r.wait_s, 6),
                "traced_busy": number(r.traced_busy),
            }
            for r in self.table.itertuples()
        ]
        columns = [c for c in self.series.columns if c not in ("t_ns", "t_s")]
        return {
            "window_s": self.seconds,
            "cpus": self.cpus,
            "cpus_basis": self.cpus_basis,
            "sampled": self.sampled,
            "threads": self.threads,
            "sized_threads": self.sized_threads,
            "on_cpu": number(self.on_cpu),
            "peak_on_cpu": number(self.peak_on_cpu),
            "pools": pools,
            "libraries": [dict(lib) for lib in self.libraries],
            "series": {
                "resolution_s": self.resolution_ns / 1e9,
                "t_s": [round(float(t), 6) for t in self.series["t_s"]],
                "on_cpu": {c: [round(float(v), 4) for v in self.series[c]] for c in columns},
            },
            "notes": list(self.notes),
        }


def series_resolution(width_ns: int) -> int:
    """The series' bin: 100 ms, narrower for a short window (``MIN_BINS`` bins, at least
    ``MIN_RESOLUTION_NS``), wider for a long one (at most ``MAX_BINS`` bins)."""
    short = max(MIN_RESOLUTION_NS, -(-width_ns // MIN_BINS))
    return max(1, min(SERIES_RESOLUTION_NS, short), -(-width_ns // MAX_BINS))


def _edges(lo: int, hi: int, resolution_ns: int) -> np.ndarray:
    edges = np.arange(lo, hi + resolution_ns, resolution_ns, dtype=np.int64)
    edges[-1] = min(edges[-1], hi)
    return edges if len(edges) >= 2 else np.array([lo, hi], dtype=np.int64)


def _kernel_use(
    run: Run, pool_of_thread: Mapping[int, str], edges: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Per census pool: CPU ns per bin between ``edges``, and run-queue wait ns in all."""
    cpu: dict[str, np.ndarray] = {}
    wait: dict[str, float] = {}
    for (thread, _tid), group in run.samples.groupby(["thread", "tid"], sort=False):
        pool = pool_of_thread.get(int(thread), UNKNOWN)
        t = group["t_ns"].to_numpy()
        grown = np.diff(counter_at(t, group["cpu_ns"].to_numpy(), edges))
        cpu[pool] = cpu.get(pool, np.zeros(len(edges) - 1)) + grown
        waited = counter_at(t, group["wait_ns"].to_numpy(), edges[[0, -1]])
        wait[pool] = wait.get(pool, 0.0) + float(waited[1] - waited[0])
    return cpu, wait


def _traced_busy(run: Run, pools: np.ndarray, window: tuple[int, int]) -> dict[str, float | None]:
    """Mean threads owning work by the trace, per census pool with a trace line (else None)."""
    width = window[1] - window[0]
    busy = merged_busy(run, *window) if width > 0 else {}
    lined = run.threads["line_id"].notna().to_numpy()
    out: dict[str, float | None] = {}
    for thread, pool, has_line in zip(run.threads["thread"], pools, lined, strict=True):
        if not has_line:
            out.setdefault(pool, None)
            continue
        start, end = busy.get(int(thread), (np.zeros(0), np.zeros(0)))
        out[pool] = (out.get(pool) or 0.0) + float((end - start).sum()) / max(width, 1)
    return out


def _usable_cpus(run: Run, cpus_given: bool) -> tuple[int | None, str]:
    cpus = run.manifest.usable_cpus
    if cpus:
        return cpus, "given (--cpus)" if cpus_given else "usable CPUs"
    return None, "unknown: give --cpus N"


def thread_census(
    run: Run,
    window: tuple[int, int],
    cpus_given: bool = False,
    libraries: Mapping[str, Any] | None = None,
) -> Census:
    """The census over ``window`` (see ``Census``). ``libraries``: the content of
    ``thread_libraries.json`` (default: read from the run's directory, where it has one)."""
    lo, hi = window
    if libraries is None and run.manifest.exists:
        libraries = read_thread_libraries(run.path)
    report = last_report(libraries)
    threads = run.threads
    pools = census_pools(threads)
    resolution = series_resolution(max(hi - lo, 1))
    edges = _edges(lo, hi, resolution)
    sampled = not run.samples.empty and hi > lo
    pool_of_thread = {int(t): str(p) for t, p in zip(threads["thread"], pools, strict=True)}
    cpu, wait = _kernel_use(run, pool_of_thread, edges) if sampled else ({}, {})
    busy = _traced_busy(run, pools, window)
    sources = pool_sizes(run, threads, pools, report)
    counts = Counter(str(p) for p in pools)
    width_s = (hi - lo) / 1e9
    shown = [p for p in POOLS if counts[p] or sources[p][0] is not None or p in cpu]
    nan = float("nan")
    table = pd.DataFrame(
        {
            "pool": shown,
            "threads": [counts[p] for p in shown],
            "size": pd.array([sources[p][0] for p in shown], dtype="Int64"),
            "source": [sources[p][1] for p in shown],
            "cpu_s": [cpu[p].sum() / 1e9 if p in cpu else (0.0 if sampled else nan) for p in shown],
            "wait_s": [wait.get(p, 0.0 if sampled else nan) / 1e9 for p in shown],
            "traced_busy": [nan if busy.get(p) is None else busy[p] for p in shown],
        }
    )
    table["on_cpu"] = table["cpu_s"] / width_s if width_s > 0 else nan
    widths = np.maximum(np.diff(edges), 1).astype(np.float64)
    series = pd.DataFrame({"t_ns": edges[:-1], "t_s": (edges[:-1] - lo) / 1e9})
    for pool in shown if sampled else []:
        series[pool] = cpu.get(pool, np.zeros(len(widths))) / widths
    cpus, basis = _usable_cpus(run, cpus_given)
    return Census(
        window=window,
        table=table[COLUMNS],
        series=series if sampled else series.iloc[0:0],
        resolution_ns=resolution,
        cpus=cpus,
        cpus_basis=basis,
        sampled=sampled,
        libraries=tuple((report or {}).get("libraries", ())),
        notes=_notes(sampled, report, run),
    )


def _notes(sampled: bool, report: Mapping[str, Any] | None, run: Run) -> tuple[str, ...]:
    notes = []
    if not sampled:
        notes.append("no OS samples: CPU seconds and threads on a CPU need the OS sampler")
    if report is None and run.manifest.exists:
        notes.append("threadpoolctl was not asked: no thread_libraries.json in this run")
    elif report is not None and report.get("error"):
        notes.append(f"threadpoolctl: {report['error']}")
    return tuple(notes)
