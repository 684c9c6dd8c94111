"""A server's requests as the replay takes them: the stretch of the window's requests
(``metrics.requests.requests_in``) replayed.

A server's threads make their requests side by side, so its window is replayed as one piece
of time (``step_work.request_work``), not step by step; at most ``MAX_REQUESTS``
consecutive requests from the middle of the window, fewer where they hold many closures (the
replay is Python: about a second per 8000 closures and setting). Its figures are
the replayed requests' span (the requests per second) and each one's latency, every setting
scaled by the replay of the recorded one as a loop's step times are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MAX_REQUESTS = 120  # replayed at most, consecutive, from the middle of the window ...
MAX_CLOSURES = 8000  # ... and fewer where they hold more inter-op closures than this ...
LEAST_REQUESTS = 20  # ... but at least this many
PERCENTILES = (50, 99)


def replayed_stretch(
    requests: pd.DataFrame,
    closure_starts: np.ndarray,
    most: int = MAX_REQUESTS,
    most_closures: int = MAX_CLOSURES,
) -> pd.DataFrame:
    """Consecutive requests (by start) from the middle of ``requests``: at most ``most``, and
    fewer where their span holds more than ``most_closures`` inter-op closures
    (``closure_starts``: their starts, sorted), but at least ``LEAST_REQUESTS``."""
    ordered = requests.sort_values("start_ns", kind="stable").reset_index(drop=True)
    n = len(ordered)
    if n <= LEAST_REQUESTS:
        return ordered
    start, end = ordered["start_ns"].to_numpy(), np.maximum.accumulate(ordered["end_ns"].to_numpy())
    count = min(n, most)
    while count > LEAST_REQUESTS:
        first = (n - count) // 2
        last = first + count - 1
        held = np.searchsorted(closure_starts, end[last]) - np.searchsorted(
            closure_starts, start[first]
        )
        if held <= most_closures:
            break
        count = max(LEAST_REQUESTS, count * most_closures // max(int(held), 1))
    first = (n - count) // 2
    return ordered.iloc[first : first + count].reset_index(drop=True)


def percentiles_ms(latency_ns: np.ndarray) -> tuple[float, float]:
    """The p50 and p99 of latencies, in ms (0 for none)."""
    if len(latency_ns) == 0:
        return 0.0, 0.0
    p50, p99 = np.percentile(np.asarray(latency_ns, dtype=np.float64) / 1e6, PERCENTILES)
    return float(p50), float(p99)
