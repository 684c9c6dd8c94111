"""A server's figures: its requests, throughput, latency, requests in flight, and where each
request's time went.

A request is a unit of work (``work.py``) of a server-shaped workload: an outermost
tf.function call (or ``Trace(step_num=)`` block) on any Python thread. The requests of a
window are those that start in it (a call that started before, waiting for the first call's
tracing, belongs to the warm-up); throughput is their count over the window's seconds.

Each request's time is split by what it waited for, following its work through the trace's
flows: a closure belongs to the request whose thread scheduled it (its ``Record`` falls inside
the request's call), or to the request of the closure that was running on the worker that
scheduled it, and so on down the chain. Every instant of the request's span goes to the first
that holds (they add up to its latency):

1. ``eigen wait``: a closure of its work is queued for the intra-op pool while none of its
   intra-op closures runs (an op waits for Eigen workers);
2. ``running``: a closure of its work runs on a pool thread (on a core, or waiting for one:
   the trace cannot tell; ``cpu`` in the pools table can);
3. ``inter-op wait``: a closure of its work is queued for an inter-op thread;
4. ``python``: its calling thread is outside TensorFlow (the function's Python around the
   call: argument handling, tf.function's dispatch);
5. ``tf runtime``: the rest: TF on the calling thread (dispatch, function instantiation,
   waking the caller when the work is done).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_of_threads
from tftrace.analysis.metrics.intervals import StepFunction, level_changes
from tftrace.analysis.metrics.work import Work
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run

REQUEST_CATEGORIES = ("eigen wait", "running", "inter-op wait", "python", "tf runtime")
COLUMNS = ("request", "thread", "function", "start_ns", "end_ns", "latency_ns", *REQUEST_CATEGORIES)
PERCENTILES = (50, 90, 99)
# A chain of closures is followed this many hops at most (each hop doubles the reach).
_MAX_JUMPS = 32


@dataclass(frozen=True)
class Requests:
    """The requests of a server in the analysed window (``table``: one row each, ``COLUMNS``;
    the category columns are shares of each request's latency), what they are (``source``),
    how many the whole trace holds (``found``) and the ``window`` they were counted over."""

    source: str
    table: pd.DataFrame
    window: tuple[int, int]
    found: int
    threads: int

    @property
    def seconds(self) -> float:
        return (self.window[1] - self.window[0]) / 1e9

    @property
    def categories(self) -> tuple[str, ...]:
        """The share columns of ``table``: where each request's latency went."""
        return REQUEST_CATEGORIES

    @property
    def throughput(self) -> float:
        """Requests per second over the window."""
        return len(self.table) / self.seconds if self.seconds > 0 else 0.0

    def latency(self) -> pd.DataFrame:
        """Latency percentiles in ms: one row for all requests (``function`` = "all"), then
        one per function when there are several."""
        rows = [_latency_row("all", self.table)]
        functions = self.table["function"].astype(str)
        if functions.nunique() > 1:
            rows += [_latency_row(f, self.table[functions == f]) for f in sorted(set(functions))]
        return pd.DataFrame(rows)

    def breakdown(self) -> pd.DataFrame:
        """Where the requests' time went: each category's share of the summed latency, and
        the mean ms per request."""
        t = self.table
        latency = t["latency_ns"].to_numpy(dtype=np.float64)
        total = latency.sum()
        rows = []
        for c in REQUEST_CATEGORIES:
            ns = float((t[c].to_numpy(dtype=np.float64) * latency).sum())
            rows.append(
                {
                    "category": c,
                    "share": ns / total if total > 0 else 0.0,
                    "mean_ms": ns / len(t) / 1e6 if len(t) else 0.0,
                }
            )
        return pd.DataFrame(rows)

    def in_flight(self, resolution_ns: int | None = None) -> pd.DataFrame:
        """Requests in flight over the window: mean per bin (``t_s`` on the run's axis, bin
        start), ``resolution_ns`` wide (default: 200 bins)."""
        lo, hi = self.window
        if hi <= lo or self.table.empty:
            return pd.DataFrame({"t_s": [], "in_flight": []})
        step = resolution_ns or max((hi - lo) // 200, 1)
        edges = np.arange(lo, hi + step, step, dtype=np.int64)
        at = in_flight(self.table).integral_at(np.clip(edges, lo, hi))
        means = np.diff(at) / np.diff(edges)
        return pd.DataFrame({"t_s": edges[:-1] / 1e9, "in_flight": means})

    def mean_in_flight(self) -> float:
        lo, hi = self.window
        if hi <= lo or self.table.empty:
            return 0.0
        return float(self.table["latency_ns"].sum()) / (hi - lo)

    def peak_in_flight(self) -> int:
        return int(in_flight(self.table).values.max()) if len(self.table) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "requests": len(self.table),
            "found": self.found,
            "threads": self.threads,
            "window_s": self.seconds,
            "throughput_per_s": self.throughput,
            "in_flight_mean": self.mean_in_flight(),
            "in_flight_peak": self.peak_in_flight(),
            "latency_ms": self.latency().to_dict(orient="records"),
            "breakdown": self.breakdown().to_dict(orient="records"),
        }


def in_flight(table: pd.DataFrame) -> StepFunction:
    """Requests in flight over time: +1 at each start, -1 at each end (a request that ends as
    another starts is not in flight with it)."""
    start, end = table["start_ns"].to_numpy(np.int64), table["end_ns"].to_numpy(np.int64)
    ones = np.ones(len(start), dtype=np.int64)
    return level_changes(np.r_[start, end], np.r_[ones, -ones])


def _latency_row(function: str, table: pd.DataFrame) -> dict[str, Any]:
    ms = table["latency_ns"].to_numpy(dtype=np.float64) / 1e6
    if len(ms) == 0:
        return {"function": function, "requests": 0, "p50_ms": None, "p90_ms": None,
                "p99_ms": None, "max_ms": None, "mean_ms": None}  # fmt: skip
    p50, p90, p99 = np.percentile(ms, PERCENTILES)
    return {
        "function": function,
        "requests": len(ms),
        "p50_ms": float(p50),
        "p90_ms": float(p90),
        "p99_ms": float(p99),
        "max_ms": float(ms.max()),
        "mean_ms": float(ms.mean()),
    }


def server_window(work: Work, warmup_calls: int = 1) -> tuple[int, int] | None:
    """From the end of the warm-up (each function's first ``warmup_calls`` calls) to the end
    of the last request that starts after it; None when no request does."""
    start = work.warmup_end(warmup_calls)
    if start is None:
        return None
    after = work.units[work.units["start_ns"] >= start]
    if after.empty:
        return None
    return start, int(after["end_ns"].max())


def requests_in(work: Work, window: tuple[int, int]) -> pd.DataFrame:
    """The requests that start in ``window``, numbered from 1 by start: ``request``,
    ``thread``, ``function``, ``start_ns``, ``end_ns``, ``latency_ns``."""
    lo, hi = window
    units = work.units
    inside = units[(units["start_ns"] >= lo) & (units["start_ns"] < hi)]
    start = inside["start_ns"].to_numpy(dtype=np.int64)
    end = inside["end_ns"].to_numpy(dtype=np.int64)
    return pd.DataFrame(
        {
            "request": np.arange(1, len(inside) + 1),
            "thread": inside["thread"].to_numpy(),
            "function": inside["name"].astype(str).to_numpy(),
            "start_ns": start,
            "end_ns": end,
            "latency_ns": end - start,
        }
    )


def measure_requests(run: Run, work: Work, window: tuple[int, int]) -> Requests:
    """The requests that start in ``window``, each with its time split (module doc)."""
    table = requests_in(work, window)
    table[list(REQUEST_CATEGORIES)] = split_request_time(run, work.units, table)
    return Requests(work.source, table, window, len(work.units), work.threads)


def _owner_of(thread: np.ndarray, at: np.ndarray, owners: pd.DataFrame) -> np.ndarray:
    """For each (thread, time), the row of ``owners`` (thread, start_ns, end_ns; one thread's
    rows disjoint) whose span on that thread holds the time; -1 where none does."""
    out = np.full(len(at), -1, dtype=np.int64)
    if len(at) == 0 or owners.empty:
        return out
    o_thread = owners["thread"].to_numpy(dtype=np.int64)
    o_start = owners["start_ns"].to_numpy(dtype=np.int64)
    o_end = owners["end_ns"].to_numpy(dtype=np.int64)
    for th in np.intersect1d(np.unique(o_thread), np.unique(thread)):
        rows = np.flatnonzero(o_thread == th)
        rows = rows[np.argsort(o_start[rows], kind="stable")]
        probe = np.flatnonzero(thread == th)
        pos = np.searchsorted(o_start[rows], at[probe], side="right") - 1
        cand = rows[np.maximum(pos, 0)]
        ok = (pos >= 0) & (o_end[cand] >= at[probe])
        out[probe[ok]] = cand[ok]
    return out


def _region_requests(run: Run, units: pd.DataFrame, requests: pd.DataFrame) -> np.ndarray:
    """The row of ``requests`` each region of the run works for (-1: none of them)."""
    regions = run.regions
    n = len(regions)
    by = regions["scheduled_by"].to_numpy(dtype=np.float64, na_value=np.nan)
    at = regions["scheduled_ns"].to_numpy(dtype=np.float64, na_value=np.nan)
    known = ~np.isnan(by) & ~np.isnan(at)
    by_i = np.where(known, by, -1).astype(np.int64)
    at_i = np.where(known, at, 0).astype(np.int64)
    # a closure scheduled from a Python thread: the unit of work there (any unit, so that a
    # request's chain is never mistaken for a later one)
    unit_of = _owner_of(by_i, at_i, units)
    unit_of[~known] = -1
    # ... from a worker: the region running there
    parent = _owner_of(by_i, at_i, regions[["thread", "start_ns", "end_ns"]])
    parent[~known | (unit_of >= 0)] = -1
    # unit row -> request row (units outside the window's requests: -1)
    key = pd.MultiIndex.from_arrays([units["thread"], units["start_ns"]])
    req_key = pd.MultiIndex.from_arrays([requests["thread"], requests["start_ns"]])
    unit_to_request = req_key.get_indexer(key)
    label = np.where(unit_of >= 0, unit_to_request[np.maximum(unit_of, 0)], -1)
    # follow each chain to its unit: pointer jumping, label known once a root is reached
    done = (unit_of >= 0) | (parent < 0)
    for _ in range(_MAX_JUMPS):
        if done.all():
            break
        p = np.maximum(parent, 0)
        take = ~done & done[p]
        label[take] = label[p[take]]
        done = done | take
        # jump: parent := parent's parent where the parent is not done
        jump = ~done & (parent >= 0)
        parent = np.where(jump, parent[p], parent)
    label[~done] = -1
    return label if n else np.zeros(0, dtype=np.int64)


def split_request_time(run: Run, units: pd.DataFrame, requests: pd.DataFrame) -> np.ndarray:
    """(requests x REQUEST_CATEGORIES) shares of each request's latency (module doc)."""
    n = len(requests)
    out = np.zeros((n, len(REQUEST_CATEGORIES)), dtype=np.float64)
    if n == 0:
        return out
    r_start = requests["start_ns"].to_numpy(dtype=np.int64)
    r_end = requests["end_ns"].to_numpy(dtype=np.int64)
    sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (request, start, end)
    regions = run.regions
    label = _region_requests(run, units, requests)
    mine = label >= 0
    pool = np.asarray(pool_of_threads(run, regions["thread"].to_numpy()).astype(str))
    intra = pool == Pool.INTRA_OP.value
    start = regions["start_ns"].to_numpy(dtype=np.int64)
    end = regions["end_ns"].to_numpy(dtype=np.int64)
    sched = regions["scheduled_ns"].to_numpy(dtype=np.float64, na_value=np.nan)
    queued = mine & ~np.isnan(sched)
    sched_i = np.where(queued, sched, 0).astype(np.int64)
    sets.append((label[queued & intra], sched_i[queued & intra], start[queued & intra]))  # Eigen q
    sets.append((label[mine & intra], start[mine & intra], end[mine & intra]))  # Eigen running
    sets.append((label[mine & ~intra], start[mine & ~intra], end[mine & ~intra]))  # pool running
    sets.append((label[queued & ~intra], sched_i[queued & ~intra], start[queued & ~intra]))
    sets.append(_caller_in_tf(run, requests))
    counts = _open_counts(sets, r_start, r_end)  # per segment: (request, width, counts per set)
    req, width, c = counts
    eigen_q, eigen_run, pool_run, inter_q, in_tf = (c[:, k] > 0 for k in range(5))
    category = np.select(
        [eigen_q & ~eigen_run, eigen_run | pool_run, inter_q, ~in_tf],
        [0, 1, 2, 3],
        default=4,
    )
    ns = np.zeros((n, len(REQUEST_CATEGORIES)), dtype=np.float64)
    np.add.at(ns, (req, category), width)
    latency = np.maximum(r_end - r_start, 1).astype(np.float64)
    return ns / latency[:, None]


def _caller_in_tf(run: Run, requests: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TF events (not the request's own annotation) on each request's calling thread inside
    its span: the caller is in TensorFlow, not Python."""
    ev = run.events
    kinds = ev["kind"].to_numpy()
    keep = np.isin(kinds, [EventKind.CALL.value, EventKind.OP.value, EventKind.EXECUTOR.value])
    keep &= np.isin(ev["thread"].to_numpy(), requests["thread"].unique())
    e = ev[keep]
    thread = e["thread"].to_numpy(dtype=np.int64)
    owner = _owner_of(thread, e["start_ns"].to_numpy(dtype=np.int64), requests)
    hit = owner >= 0
    return owner[hit], e["start_ns"].to_numpy()[hit], e["end_ns"].to_numpy()[hit]


def _open_counts(
    sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]], r_start: np.ndarray, r_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut every request's span at the boundaries of its intervals in each set (clipped to the
    span): per piece, the request, its width and how many intervals of each set are open."""
    k = len(sets)
    reqs, times, deltas = [], [], []
    n = len(r_start)
    # the span itself: set k, so that every piece of it is cut out
    for j, (req, s, e) in enumerate([*sets, (np.arange(n), r_start, r_end)]):
        req = req.astype(np.int64)
        s = np.maximum(s, r_start[req])
        e = np.minimum(e, r_end[req])
        ok = e > s
        req, s, e = req[ok], s[ok], e[ok]
        one = np.zeros((len(req), k + 1), dtype=np.int32)
        one[:, j] = 1
        reqs += [req, req]
        times += [s, e]
        deltas += [one, -one]
    req = np.concatenate(reqs)
    t = np.concatenate(times)
    d = np.concatenate(deltas)
    order = np.lexsort((t, req))
    req, t, d = req[order], t[order], d[order]
    level = np.cumsum(d, axis=0)
    same = req[1:] == req[:-1]
    width = np.where(same, t[1:] - t[:-1], 0)
    inside = same & (level[:-1, k] > 0) & (width > 0)
    return req[:-1][inside], width[inside], level[:-1][inside][:, :k]
