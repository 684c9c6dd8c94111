"""CPU time outside the traced busy intervals, per sample interval."""

from __future__ import annotations


def test_cpu_outside_busy_counts_each_sample_interval():
    """Interval 0-10: 4 ns CPU, busy 10 (waiting for a core): adds 0, does not cancel the
    spin of 10-20 (8 ns CPU, busy 2) -> 6; the plain difference would say 12 - 12 = 0."""
    import numpy as np

    from tftrace.analysis.metrics.cpu_time import _outside_busy
    from tftrace.analysis.metrics.intervals import concurrency

    busy = concurrency([np.array([0, 10])], [np.array([10, 12])], 0, 20)
    t, cpu = np.array([0, 10, 20]), np.array([100, 104, 112])
    assert _outside_busy(t, cpu, busy, 0, 20) == 6
    assert _outside_busy(t, cpu, busy, 10, 20) == 6
    assert np.isnan(_outside_busy(np.zeros(0), np.zeros(0), busy, 0, 20))
