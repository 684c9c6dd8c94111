"""The cross-host view: steps matched by number across hosts, the time each worker waits in
collective ops for the others, and the straggler.

In a data-parallel step every worker's collective (all-reduce) completes only when the last
worker joins it, so a worker's time inside collectives is its communication plus its wait for
the slowest. Per step, the host with the shortest collective time waited least: its collective
time is the communication itself, and each other host's excess over it is its **wait**. A
host's **own time** per step is its step period less its collective time: what it spends
computing, in Python between steps or descheduled. The straggler has the most own time.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from tftrace.analysis.cluster.host import HostSummary

# A straggler leads the others' median own time by at least this share of the step period,
# and is the slowest host in at least half of the matched steps: less is noise between hosts.
MIN_LEAD_SHARE = 0.05
MIN_SLOWEST_SHARE = 0.5

WORKER_COLUMNS = (
    "host",
    "steps",
    "step_ms",
    "period_ms",
    "collective_ms",
    "wait_ms",
    "own_ms",
    "between_steps_ms",
)


def matched_steps(hosts: list[HostSummary]) -> pd.DataFrame:
    """One row per host and step number that every host with steps has: host, step,
    call_ms, period_ms, collective_ms, wait_ms, own_ms, between_steps_ms, end_wall_ns."""
    with_steps = [h for h in hosts if h.error is None and len(h.steps)]
    if not with_steps:
        return pd.DataFrame(columns=["host", "step"])
    common = set.intersection(*(set(h.steps["step"].tolist()) for h in with_steps))
    parts = []
    for h in with_steps:
        s = h.steps[h.steps["step"].isin(common)].copy()
        s.insert(0, "host", h.name)
        parts.append(s)
    df = pd.concat(parts, ignore_index=True)
    fastest = df.groupby("step")["collective_ms"].transform("min")
    df["wait_ms"] = df["collective_ms"] - fastest
    df["own_ms"] = df["period_ms"] - df["collective_ms"]
    df["between_steps_ms"] = df["period_ms"] - df["call_ms"]
    return df


def workers_table(hosts: list[HostSummary], steps: pd.DataFrame) -> pd.DataFrame:
    """Per host, the medians over the matched steps (``WORKER_COLUMNS``)."""
    rows = []
    for h in hosts:
        mine = steps[steps["host"] == h.name] if len(steps) else steps
        med = mine.median(numeric_only=True) if len(mine) else pd.Series(dtype=float)

        def m(col: str, med: pd.Series = med) -> float:
            return float(med.get(col, np.nan))

        rows.append(
            (
                h.name,
                len(mine),
                m("call_ms"),
                m("period_ms"),
                m("collective_ms"),
                m("wait_ms"),
                m("own_ms"),
                m("between_steps_ms"),
            )
        )
    return pd.DataFrame(rows, columns=list(WORKER_COLUMNS))


def straggler(workers: pd.DataFrame, steps: pd.DataFrame) -> dict[str, float | str] | None:
    """The straggler: host, lead_ms (its own time less the others' median), slowest_share
    (of matched steps in which it had the most own time), period_ms, others_wait_ms (the
    others' median wait per step); None with fewer than two hosts or no clear one."""
    ranked = workers.dropna(subset=["own_ms"])
    ranked = ranked[ranked["steps"] > 0]
    if len(ranked) < 2:
        return None
    top = ranked.loc[ranked["own_ms"].idxmax()]
    others = ranked[ranked["host"] != top["host"]]
    lead = float(top["own_ms"] - others["own_ms"].median())
    per_step = steps.dropna(subset=["own_ms"])
    slowest = per_step.loc[per_step.groupby("step")["own_ms"].idxmax(), "host"]
    share = float((slowest == top["host"]).mean()) if len(slowest) else 0.0
    period = float(ranked["period_ms"].median())
    if lead < MIN_LEAD_SHARE * period or share < MIN_SLOWEST_SHARE:
        return None
    return {
        "host": str(top["host"]),
        "lead_ms": lead,
        "slowest_share": share,
        "period_ms": period,
        "others_wait_ms": float(others["wait_ms"].median()),
    }


CLOCK_COLUMNS = ("host", "same_clock", "synchronised", "est_error_ms", "step_end_gap_ms")


def clock_offsets(hosts: list[HostSummary], steps: pd.DataFrame) -> pd.DataFrame:
    """How well the hosts line up on one time axis, against the first host (``CLOCK_COLUMNS``):
    same_clock (one machine: one clock, offset 0 by construction); synchronised and
    est_error_ms, the kernel's NTP state and estimated error of each host's clock (two hosts
    align within the sum of their errors); and step_end_gap_ms, the median gap between the
    ends of the same steps (a collective releases all workers together, so it bounds the
    offset plus the work after the collective)."""
    rows = []
    if not hosts:
        return pd.DataFrame(columns=list(CLOCK_COLUMNS))
    ref = hosts[0]
    ends = (
        steps.pivot_table(index="step", columns="host", values="end_wall_ns")
        if len(steps)
        else None
    )
    for h in hosts:
        gap = np.nan
        if ends is not None and h.name in ends and ref.name in ends:
            gap = float(np.median(ends[h.name] - ends[ref.name])) / 1e6
        same = h.hostname is not None and h.hostname == ref.hostname
        sync = h.clock_sync.get("synchronised")
        error = h.clock_sync.get("esterror_us")
        rows.append((h.name, same, sync, error / 1e3 if error is not None else np.nan, gap))
    return pd.DataFrame(rows, columns=list(CLOCK_COLUMNS))


def clock_verdict(clocks: pd.DataFrame) -> str:
    """How well the hosts' traces line up, in one sentence."""
    if clocks.empty or clocks["same_clock"].all():
        return "all hosts on one machine: one clock, no offset between their traces"
    if clocks["synchronised"].eq(True).all():
        bound = float(clocks["est_error_ms"].nlargest(2).sum())
        return f"clocks NTP-synchronised: the traces line up within about {bound:.1f} ms"
    return (
        "some clocks are not synchronised (kernel's NTP state): the offsets are unknown; the "
        "step-end gaps are the best estimate of them"
    )


def pools_side_by_side(hosts: Iterable[HostSummary]) -> pd.DataFrame:
    """Each host's pool table in one frame: host, pool, threads, mean, peak."""
    parts = []
    for h in hosts:
        if not h.pools.empty:
            p = h.pools[["pool", "threads", "mean", "peak"]].copy()
            p.insert(0, "host", h.name)
            parts.append(p)
    if not parts:
        return pd.DataFrame(columns=["host", "pool", "threads", "mean", "peak"])
    return pd.concat(parts, ignore_index=True)
