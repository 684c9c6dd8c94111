"""Who else held the cores (metrics/contention.py), on hand-built machine readings: other
processes' CPU on the usable CPUs, steal, the quota's throttling, each process by name; and
the headline's run-queue wait split by who held the core, with the bound left to what a
setting can win back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from builders import MS, cpu_samples_table, make_run, threads_table
from tftrace.analysis.metrics.concurrency import pool_concurrencies
from tftrace.analysis.metrics.contention import contention, growth, split_run_queue
from tftrace.analysis.metrics.core_use import core_use
from tftrace.analysis.model.pools import Pool

T = np.arange(0, 1001, 100, dtype=np.int64) * MS  # readings every 100 ms over 1 s


def cpu_readings(busy: dict[int, float], steal: dict[int, float]) -> pd.DataFrame:
    """Per CPU, cumulative busy and steal ns growing at the given shares of wall time."""
    rows = [
        pd.DataFrame(
            {
                "t_ns": T,
                "cpu": cpu,
                "busy_ns": (T * share).astype(np.int64),
                "steal_ns": (T * steal.get(cpu, 0.0)).astype(np.int64),
            }
        )
        for cpu, share in busy.items()
    ]
    return pd.concat(rows, ignore_index=True)


def process_readings(rows: list[tuple[int, float, int]]) -> pd.DataFrame:
    """(pid, cores it uses, the CPU it runs on) -> cumulative readings."""
    if not rows:
        return pd.DataFrame(columns=["t_ns", "pid", "cpu_ns", "processor"])
    return pd.concat(
        [
            pd.DataFrame(
                {"t_ns": T, "pid": pid, "cpu_ns": (T * cores).astype(np.int64), "processor": cpu}
            )
            for pid, cores, cpu in rows
        ],
        ignore_index=True,
    )


NAMES = pd.DataFrame(
    {
        "pid": [42, 7, 9],
        "name": ["burner", "tftrace", "elsewhere"],
        "role": ["other", "recorder", "other"],
    }
)


def own(cores: float):
    return lambda grid: grid * cores


def test_other_processes_steal_and_throttling_over_the_window():
    """CPUs 0 and 1 usable, CPU 2 not: CPU 0 fully busy, CPU 1 half busy with 10 % steal;
    the process uses 0.5 core, so others took 1.5 - 0.5 = 1.0 core; a burner on CPU 0 at 0.9
    core, tftrace's recorder on CPU 1 at 0.05, a process on CPU 2 left out."""
    cgroup = pd.DataFrame(
        {
            "t_ns": T,
            "periods": np.arange(len(T)) * 10,
            "throttled_periods": np.arange(len(T)) * 3,
            "throttled_ns": T // 5,  # throttled 20 % of the time, summed over CPUs
        }
    )
    held = contention(
        cpu_readings({0: 1.0, 1: 0.5, 2: 1.0}, {1: 0.1}),
        process_readings([(42, 0.9, 0), (7, 0.05, 1), (9, 1.0, 2)]),
        NAMES,
        cgroup,
        own(0.5),
        (0, 1000 * MS),
        (0, 1),
        quota=1.5,
    )
    assert held is not None
    assert held.cpus == (0, 1)
    assert held.own_core_s == pytest.approx(0.5)
    assert held.others_core_s == pytest.approx(1.0)
    assert held.steal_core_s == pytest.approx(0.1)
    assert held.throttled_core_s == pytest.approx(0.2)
    assert (held.periods, held.throttled_periods) == (100, 30)
    assert list(held.processes["pid"]) == [42, 7]  # CPU 2's process is not on the usable CPUs
    assert held.processes["core_s"].tolist() == pytest.approx([0.9, 0.05])
    assert held.tftrace_core_s == pytest.approx(0.05)
    assert held.to_json()["processes"][0] == {
        "pid": 42,
        "name": "burner",
        "role": "other",
        "core_s": 0.9,
    }
    # half the window: half of each
    half = contention(
        cpu_readings({0: 1.0, 1: 0.5}, {}), process_readings([]), NAMES, pd.DataFrame(),
        own(0.5), (250 * MS, 750 * MS), (0, 1),
    )  # fmt: skip
    assert half is not None and half.others_core_s == pytest.approx(0.5)
    assert half.processes.empty and half.periods == 0


def test_no_readings_in_the_window_is_none():
    readings, none = cpu_readings({0: 1.0}, {}), process_readings([])

    def held(cpus: pd.DataFrame, window: tuple[int, int]):
        return contention(cpus, none, NAMES, pd.DataFrame(), own(0), window, (0,))

    assert held(readings, (2000 * MS, 3000 * MS)) is None
    assert held(readings.iloc[:0], (0, MS)) is None


def test_growth_is_linear_between_readings_and_flat_outside():
    t, value = np.array([10, 20]), np.array([0, 100])
    assert growth(t, value, np.array([0, 10, 15, 20, 30])).tolist() == [0, 50, 50, 0]
    assert growth(np.zeros(0), np.zeros(0), np.array([0, 1])).tolist() == [0]


def test_run_queue_wait_goes_to_throttling_then_by_who_held_the_cores():
    split = split_run_queue(
        queued_ns=np.array([10.0, 10.0, 10.0, 10.0]),
        others_ns=np.array([0.0, 6.0, 30.0, 0.0]),
        steal_ns=np.array([0.0, 2.0, 10.0, 0.0]),
        throttled_ns=np.array([0.0, 0.0, 0.0, 4.0]),
    )
    assert split["quota"].tolist() == [0, 0, 0, 4]
    assert split["other_processes"].tolist() == pytest.approx([0, 6, 7.5, 0])
    assert split["steal"].tolist() == pytest.approx([0, 2, 2.5, 0])
    assert split["run_queue"].tolist() == pytest.approx([10, 2, 0, 6])


def _waiting_thread_run():
    """One thread on a CPU 60 % of a 100 ms window and waiting for one the other 40 %, on
    2 cores, nothing traced."""
    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    samples = cpu_samples_table(0, 100, t, t * 6 // 10)
    samples["wait_ns"] = t * 4 // 10
    return make_run(
        threads_table([Pool.PYTHON_OTHER], 100 * MS),
        samples=samples,
        manifest={"host": {"cpu_affinity": [0, 1]}},
    )


def test_the_headline_leaves_out_the_cores_another_process_held():
    """Alone: 0.4 core of run-queue wait is the process's own, and the busy 0.6 core could
    spread over 2: at most 100 / 30 = 3.3x. With a process holding one core the whole time,
    the wait is its doing, and 0.6 core over the 1 core left bounds it at 1.67x."""
    run = _waiting_thread_run()
    window = (0, 100 * MS)
    pools = pool_concurrencies(run, window)
    alone = core_use(run, window, pools)
    causes = alone.causes.set_index("cause")["core_s"]
    assert causes["run_queue"] == pytest.approx(0.04)
    assert causes[["other_processes", "steal", "quota"]].sum() == 0
    assert alone.max_speedup == pytest.approx(100 / 30)

    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    busy = pd.DataFrame({"t_ns": np.r_[t, t], "cpu": np.repeat([0, 1], len(t))})
    busy["busy_ns"] = np.r_[t, t * 6 // 10]  # CPU 0: the other process; CPU 1: ours
    busy["steal_ns"] = 0
    held = contention(busy, process_readings([]), NAMES, pd.DataFrame(), own(0.6), window, (0, 1))
    assert held is not None and held.others_core_s == pytest.approx(0.1)
    shared = core_use(run, window, pools, held=held)
    causes = shared.causes.set_index("cause")["core_s"]
    assert causes["other_processes"] == pytest.approx(0.04)
    assert causes["run_queue"] == pytest.approx(0.0, abs=1e-12)
    assert shared.held_elsewhere_core_s == pytest.approx(0.04)
    assert shared.recoverable_share == pytest.approx(0.0, abs=1e-9)
    assert shared.max_speedup == pytest.approx(100 / 60)
    assert shared.idle_core_s == pytest.approx(alone.idle_core_s)
