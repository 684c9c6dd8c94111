"""Queue delay: how long each closure waited between being scheduled and starting.

For every region joined to its Record: ``start_ns - scheduled_ns``. By the pool of the
worker that ran it. This is the cost of inter-op scheduling that no trace viewer shows.

Given a window, the closures that started in it (so a closure counts in exactly one of two
adjacent windows), each with its whole delay: a percentile of clipped delays would mean little.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.busy import pool_of_threads
from tftrace.analysis.model.run import Run

PERCENTILES = (50, 90, 99)


def queue_delays(run: Run, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per closure with a known queue delay (started in ``window`` if given): pool,
    thread, scheduled_by, times."""
    regions = run.regions.dropna(subset=["queue_ns"])
    if window is not None:
        started = regions["start_ns"]
        regions = regions[(started >= window[0]) & (started < window[1])]
    return pd.DataFrame(
        {
            "pool": pool_of_threads(run, regions["thread"].to_numpy()),
            "thread": regions["thread"].to_numpy(),
            "scheduled_by": regions["scheduled_by"].to_numpy(dtype=np.int64),
            "scheduled_ns": regions["scheduled_ns"].to_numpy(dtype=np.int64),
            "start_ns": regions["start_ns"].to_numpy(),
            "end_ns": regions["end_ns"].to_numpy(),
            "queue_ns": regions["queue_ns"].to_numpy(dtype=np.int64),
        }
    )


def queue_delay_stats(run: Run, window: tuple[int, int] | None = None) -> pd.DataFrame:
    """Per pool: closures, then p50/p90/p99/max/mean of the queue delay in microseconds."""
    delays = queue_delays(run, window)
    rows = []
    for pool, group in delays.groupby("pool", sort=False):
        q = group["queue_ns"].to_numpy() / 1e3
        rows.append(
            {
                "pool": pool,
                "closures": len(q),
                **{f"p{p}_us": float(np.percentile(q, p)) for p in PERCENTILES},
                "max_us": float(q.max()),
                "mean_us": float(q.mean()),
                "total_ms": float(q.sum() / 1e3),
            }
        )
    columns = [
        "pool",
        "closures",
        *(f"p{p}_us" for p in PERCENTILES),
        "max_us",
        "mean_us",
        "total_ms",
    ]
    return pd.DataFrame(rows, columns=columns)


def queue_delay_histogram(
    run: Run, pool: str, bins_per_decade: int = 5, window: tuple[int, int] | None = None
) -> pd.DataFrame:
    """Closures per log-spaced bin of queue delay (ns), for plotting a distribution."""
    q = queue_delays(run, window)
    q = q.loc[q["pool"] == pool, "queue_ns"].to_numpy()
    if len(q) == 0:
        return pd.DataFrame({"lo_ns": [], "hi_ns": [], "closures": []})
    top = max(int(np.ceil(np.log10(max(q.max(), 1) + 1))), 1)
    edges = np.r_[0, np.logspace(0, top, top * bins_per_decade + 1)]
    counts, _ = np.histogram(q, bins=edges)
    return pd.DataFrame({"lo_ns": edges[:-1], "hi_ns": edges[1:], "closures": counts})
