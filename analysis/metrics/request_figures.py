"""A server's figures: its requests over time (in flight, completed) and their latency
distribution, as plot-ready tables over the requests' window (``metrics/requests.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.requests import Requests

REQUEST_BINS = 100  # bins of a server's requests over time: a few requests end in each
LATENCY_BINS_PER_DECADE = 10  # the request latency distribution's log-spaced bins

OVER_TIME_COLUMNS = ["t_ns", "t_s", "in_flight", "completed", "completed_per_s"]


def requests_over_time(
    requests: Requests, bins: int = REQUEST_BINS, resolution_ns: int | None = None
) -> pd.DataFrame:
    """Per bin of equal width over the requests' window (``bins`` of them, or
    ``resolution_ns`` wide): the mean number of requests in flight (``Requests.in_flight``),
    and the requests that ended in the bin, as a count and per second of the bin (the last
    bin ends with the window). ``t_ns`` is the bin's start on the run's axis, ``t_s`` in
    seconds since the window's start."""
    lo, hi = requests.window
    if hi <= lo or requests.table.empty:
        return pd.DataFrame(columns=OVER_TIME_COLUMNS)
    step = resolution_ns or max(1, -(-(hi - lo) // bins))
    flight = requests.in_flight(step)["in_flight"].to_numpy()
    edges = lo + step * np.arange(len(flight) + 1, dtype=np.int64)
    ended = np.histogram(requests.table["end_ns"].to_numpy(dtype=np.int64), bins=edges)[0]
    widths_s = (np.minimum(edges[1:], hi) - edges[:-1]) / 1e9
    return pd.DataFrame(
        {
            "t_ns": edges[:-1],
            "t_s": (edges[:-1] - lo) / 1e9,
            "in_flight": flight,
            "completed": ended,
            "completed_per_s": ended / widths_s,
        }
    )


LATENCY_COLUMNS = ["function", "lo_ms", "width_ms", "requests", "fraction"]


def latency_distribution(
    requests: Requests, per_decade: int = LATENCY_BINS_PER_DECADE
) -> pd.DataFrame:
    """Requests per log-spaced bin of latency (ms), and their share: of all requests
    (``function`` = "all") where one function serves them, else per function (each share of
    its own requests). The same bins for every function; empty bins at both ends dropped."""
    table = requests.table
    if table.empty:
        return pd.DataFrame(columns=LATENCY_COLUMNS)
    ms = np.maximum(table["latency_ns"].to_numpy(dtype=np.float64), 1.0) / 1e6
    first = np.floor(np.log10(ms.min()) * per_decade)
    last = max(np.ceil(np.log10(ms.max()) * per_decade), first + 1)
    edges = 10.0 ** (np.arange(first, last + 1) / per_decade)
    # rounding must not leave the shortest or the longest request out of every bin
    edges[0], edges[-1] = min(edges[0], ms.min()), max(edges[-1], ms.max())
    functions = table["function"].astype(str).to_numpy()
    names = sorted(set(functions)) if len(set(functions)) > 1 else ["all"]
    frames = []
    for name in names:
        mine = ms if name == "all" else ms[functions == name]
        counts = np.histogram(mine, bins=edges)[0]
        used = np.flatnonzero(counts)
        keep = slice(used[0], used[-1] + 1)
        frames.append(
            pd.DataFrame(
                {
                    "function": name,
                    "lo_ms": edges[:-1][keep],
                    "width_ms": np.diff(edges)[keep],
                    "requests": counts[keep],
                    "fraction": counts[keep] / len(mine),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[LATENCY_COLUMNS]
