"""request_pace on hand-built samples: two request threads whose requests and CPU are known
bin by bin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from builders import cpu_samples_table, make_run
from tftrace.analysis.metrics.request_pace import (
    BIN_NS,
    Pace,
    RequestPace,
    request_pace,
)

MS = 1_000_000
BINS = 6


def _thread(thread: int, cpu_per_bin: list[float], runs_per_bin: list[int]) -> pd.DataFrame:
    """Samples every 10 ms; the thread's CPU and runs grow evenly inside each 50 ms bin."""
    t = np.arange(0, len(cpu_per_bin) * BIN_NS + 1, 10 * MS, dtype=np.int64)
    per_ns = np.repeat(np.asarray(cpu_per_bin) / BIN_NS, 5)
    runs = np.repeat(np.asarray(runs_per_bin) / 5, 5)
    df = cpu_samples_table(
        thread, 100 + thread, t, np.r_[0, np.cumsum(per_ns * 10 * MS)].astype(np.int64)
    )
    df["slices"] = np.r_[0, np.cumsum(runs)].astype(np.int64)
    return df


def _requests(per_bin: list[int], thread: int) -> pd.DataFrame:
    ends = [
        b * BIN_NS + (k + 1) * BIN_NS // (n + 1) for b, n in enumerate(per_bin) for k in range(n)
    ]
    return pd.DataFrame({"thread": thread, "end_ns": np.asarray(ends, dtype=np.int64)})


def test_the_slowest_and_fastest_thirds_by_requests_a_bin() -> None:
    # bins 0 and 3 slow (2 requests each thread), 1 and 4 fast (6), 2 and 5 between (4)
    per_bin = [2, 6, 4, 2, 6, 4]
    cpu = [20 * MS, 24 * MS, 22 * MS] * 2  # a thread's CPU a bin: 10 ms a request slow, 4 fast
    runs = [20, 30, 25] * 2
    samples = pd.concat([_thread(1, cpu, runs), _thread(2, cpu, runs)], ignore_index=True)
    requests = pd.concat([_requests(per_bin, 1), _requests(per_bin, 2)], ignore_index=True)
    pace = request_pace(make_run(samples=samples), requests, (0, BINS * BIN_NS))
    assert pace is not None and pace.bins == BINS
    assert pace.slow.rate == pytest.approx(4 / 0.05)  # 2 threads x 2 requests a bin
    assert pace.fast.rate == pytest.approx(12 / 0.05)
    assert pace.slow.cpu_us == pytest.approx(10_000)
    assert pace.fast.cpu_us == pytest.approx(4_000)
    assert pace.slow.switches == pytest.approx(10)
    assert pace.fast.switches == pytest.approx(5)
    assert pace.two_paces


def test_a_thread_that_made_few_requests_is_no_request_thread() -> None:
    per_bin = [3] * BINS
    samples = pd.concat(
        [_thread(1, [30 * MS] * BINS, [3] * BINS), _thread(0, [5 * MS] * BINS, [50] * BINS)],
        ignore_index=True,
    )
    requests = pd.concat(
        [_requests(per_bin, 1), _requests([1, 0, 0, 0, 0, 0], 0)], ignore_index=True
    )
    pace = request_pace(make_run(samples=samples), requests, (0, BINS * BIN_NS))
    assert pace is not None
    # thread 0's CPU and its request left out
    assert pace.fast.cpu_us == pytest.approx(30_000 / 3)
    assert pace.fast.rate == pytest.approx(3 / 0.05)
    assert not pace.two_paces  # one pace throughout


def test_too_short_a_window_or_no_samples_gives_none() -> None:
    requests = _requests([2] * BINS, 1)
    samples = _thread(1, [10 * MS] * BINS, [2] * BINS)
    assert request_pace(make_run(samples=samples), requests, (0, 5 * BIN_NS)) is None
    assert request_pace(make_run(), requests, (0, BINS * BIN_NS)) is None


@pytest.mark.parametrize(
    ("slow", "fast", "two"),
    [
        (Pace(1000, 780, 8.8), Pace(1800, 490, 4.3), True),
        (Pace(1000, 780, 4.0), Pace(1800, 490, 4.3), False),  # no more switches when slow
        (Pace(1000, 560, 8.8), Pace(1800, 490, 4.3), False),  # hardly dearer
        (Pace(1500, 780, 8.8), Pace(1800, 490, 4.3), False),  # hardly slower
    ],
)
def test_two_paces_needs_slower_dearer_and_more_switches(slow: Pace, fast: Pace, two: bool) -> None:
    pace = RequestPace(9, BIN_NS, slow, fast)
    assert pace.two_paces is two
    line = pace.line()
    assert ("two paces" in line) is two
    assert f"the slowest third {slow.rate} requests/s, the fastest {fast.rate}" in line
    assert f"a request {slow.cpu_us} us and {fast.cpu_us} us" in line


def test_the_headline_says_a_two_paced_server_can_pass_the_bound() -> None:
    from types import SimpleNamespace

    from tftrace.analysis.render.core_use_text import pace_lines

    def lines(slow: Pace) -> str:
        pace = RequestPace(9, BIN_NS, slow, Pace(1800, 490, 4.3))
        requests = SimpleNamespace(throughput=1200.0)
        return " ".join(pace_lines(SimpleNamespace(request_pace=pace, requests=requests)))

    said = lines(Pace(1000, 780, 8.8))
    assert "the fast one at 1.50x the window's requests/s" in said
    assert "can pass it" in said
    assert lines(Pace(1000, 780, 4.0)) == ""  # one pace: the bound holds as it is
    assert pace_lines(SimpleNamespace(request_pace=None, requests=None)) == []


def test_bins_in_which_no_request_ended_are_left_out() -> None:
    # a lull: no cost a request in its bins, so they are no slowest bins
    per_bin = [2, 0, 6, 4, 2, 6, 4, 2]
    samples = _thread(1, [10 * MS * k for k in per_bin], [5 * k for k in per_bin])
    pace = request_pace(make_run(samples=samples), _requests(per_bin, 1), (0, 8 * BIN_NS))
    assert pace is not None and pace.bins == 7
    assert pace.slow.rate == pytest.approx(2 / 0.05)
    assert pace.slow.cpu_us == pytest.approx(10_000)
    # with two empty bins of six, four are left: too few to rank
    per_bin = [2, 0, 6, 4, 0, 6]
    samples = _thread(1, [10 * MS * k for k in per_bin], [5 * k for k in per_bin])
    assert request_pace(make_run(samples=samples), _requests(per_bin, 1), (0, 6 * BIN_NS)) is None
