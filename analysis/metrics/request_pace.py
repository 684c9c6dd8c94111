"""A server's pace over its window: requests per second bin by bin, and what its request
threads' CPU a request and their switches were where it ran slowest and fastest.

The window is cut into ``BIN_NS`` bins; each bin counts the requests that ended in it, and
the request threads' (those that made the window's requests, ``SERVING``) CPU time and how
often they were put on a CPU, by the kernel's counters (the OS sampler's schedstat, linear
between samples: ``cpu_time.counter_at``). The bins are ranked by requests per second and the
slowest and fastest thirds summed.

Why: a server whose request threads hold the interpreter lock in turn can run at two paces
at one setting. On 2 cores, four threads serving a small conv net ran 50 ms stretches at
1,100 requests/s and others at 2,000, their CPU a request 750 us with 9 switches a request
against 440 us with 3.5 (docs/predict.md, "A server's two paces"): the lock's hand-offs
cost CPU, which slows the requests, which queue for the lock more. The thread setting moves
the time spent at each pace, which a replay of the recorded work cannot see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.metrics.cpu_time import counter_at
from tftrace.analysis.model.run import Run

BIN_NS = 50_000_000
MIN_BINS = 6  # fewer whole bins than this: no pace to rank
# A request thread made at least this share of the busiest one's requests (a main thread that
# made the warm-up's last calls and then waits for the others is not one).
SERVING = 0.1
# The slowest third ran this much slower than the fastest, its requests this much dearer in
# the request threads' CPU, and with more switches: the two paces of the module doc.
PACE_SPREAD = 1.3
CPU_SPREAD = 1.2


@dataclass(frozen=True)
class Pace:
    """A share of the window's bins: requests per second, and per request the request
    threads' CPU (us) and how often they were put on a CPU (``switches``)."""

    rate: float
    cpu_us: float
    switches: float

    def to_json(self) -> dict[str, float]:
        return {"requests_per_s": self.rate, "cpu_us": self.cpu_us, "switches": self.switches}


@dataclass(frozen=True)
class RequestPace:
    """The slowest and fastest thirds of ``bins`` bins ``bin_ns`` wide (those in which a
    request ended)."""

    bins: int
    bin_ns: int
    slow: Pace
    fast: Pace

    @property
    def two_paces(self) -> bool:
        """The slowest third ran ``PACE_SPREAD`` times slower than the fastest, its requests
        ``CPU_SPREAD`` times dearer in the request threads' CPU, with more switches."""
        return (
            self.fast.rate >= PACE_SPREAD * self.slow.rate
            and self.slow.cpu_us >= CPU_SPREAD * self.fast.cpu_us
            and self.slow.switches > self.fast.switches
        )

    def over(self, rate: float) -> tuple[float, float]:
        """The slow and the fast pace's requests/s over ``rate`` (a window's, > 0)."""
        return self.slow.rate / rate, self.fast.rate / rate

    def figures(self) -> str:
        """The thirds' figures: ``pace by 50 ms: the slowest third 1031 requests/s, ...``."""
        slow, fast = self.slow, self.fast
        return (
            f"pace by {self.bin_ns / 1e6:.0f} ms: the slowest third {slow.rate:.0f} requests/s, "
            f"the fastest {fast.rate:.0f}; the request threads' CPU a request "
            f"{slow.cpu_us:.0f} us and {fast.cpu_us:.0f} us, put on a CPU "
            f"{slow.switches:.1f} and {fast.switches:.1f} times"
        )

    def line(self) -> str:
        """``figures``, and what two paces mean where the thirds show them."""
        if not self.two_paces:
            return self.figures()
        return self.figures() + (
            ": two paces, the slower one dearer in CPU with more switches (the request "
            "threads hand the interpreter lock back and forth; docs/predict.md)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "bins": self.bins,
            "bin_s": self.bin_ns / 1e9,
            "slow": self.slow.to_json(),
            "fast": self.fast.to_json(),
            "two_paces": self.two_paces,
        }


def request_pace(
    run: Run, requests: pd.DataFrame, window: tuple[int, int], bin_ns: int = BIN_NS
) -> RequestPace | None:
    """The pace of ``requests`` (``thread``, ``end_ns`` columns: ``Requests.table``) over
    ``window`` (module doc); None without the OS sampler's counters for the request threads,
    or fewer than ``MIN_BINS`` whole bins in which a request ended."""
    lo, hi = window
    count = (hi - lo) // bin_ns
    samples = run.samples
    if count < MIN_BINS or samples.empty or requests.empty:
        return None
    by = requests["thread"].astype(int)
    made = by.value_counts()
    threads = set(made.index[made >= SERVING * made.max()])
    mine = samples[samples["thread"].astype(int).isin(threads)]
    if mine.empty:
        return None
    edges = lo + bin_ns * np.arange(count + 1, dtype=np.int64)
    theirs = by.isin(threads).to_numpy()
    ends = np.sort(requests["end_ns"].to_numpy(np.int64)[theirs])
    done = np.diff(np.searchsorted(ends, edges, side="right")).astype(np.float64)
    cpu, switches = np.zeros(count), np.zeros(count)
    for _, group in mine.groupby("thread"):
        cpu += _growth(group, "cpu_ns", edges)
        switches += _growth(group, "slices", edges)
    # a bin in which no request ended has no cost a request (an idle server's lull, or one
    # request longer than the bin): left out of the ranking
    served = np.flatnonzero(done > 0)
    if len(served) < MIN_BINS:
        return None
    order = served[np.argsort(done[served], kind="stable")]
    third = len(served) // 3
    return RequestPace(
        len(served),
        bin_ns,
        _pace(order[:third], done, cpu, switches, bin_ns),
        _pace(order[-third:], done, cpu, switches, bin_ns),
    )


def _growth(group: pd.DataFrame, column: str, edges: np.ndarray) -> np.ndarray:
    return np.diff(counter_at(group["t_ns"].to_numpy(np.int64), group[column].to_numpy(), edges))


def _pace(
    bins: np.ndarray, done: np.ndarray, cpu: np.ndarray, switches: np.ndarray, bin_ns: int
) -> Pace:
    n = float(done[bins].sum())
    seconds = len(bins) * bin_ns / 1e9
    return Pace(n / seconds, float(cpu[bins].sum()) / n / 1e3, float(switches[bins].sum()) / n)
