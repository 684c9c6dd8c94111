"""Who else held the cores (metrics/contention.py), on hand-built machine readings: other
processes' CPU on the usable CPUs, steal, the quota's throttling, each process by name; and
the headline's run-queue wait split by who held the core, with the bound left to what a
setting can win back."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from builders import MS, cpu_samples_table, make_run, threads_table
from tftrace.analysis.analyze import analyze
from tftrace.analysis.findings.contention_rules import (
    library_pool_crowds_cores,
    library_variable,
    other_processes_take_cores,
    quota_throttles,
    steal_time,
)
from tftrace.analysis.metrics.concurrency import pool_concurrencies
from tftrace.analysis.metrics.contention import contention, process_table, split_run_queue
from tftrace.analysis.metrics.core_use import core_use
from tftrace.analysis.model.counters import interval_growth
from tftrace.analysis.model.pools import Pool
from tftrace.tracer.manifest_reader import Manifest

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


def _core_s(use, cause: str) -> float:
    return float(use.causes.set_index("cause").loc[cause, "core_s"])


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


def test_other_processes_are_never_below_nothing():
    """The CPUs' busy time leaves 0.02 core beside the process, but the per-process table,
    read apart, gave tftrace's recorder 0.05: other processes held none, not -0.03 (the line
    printed under the headline, the finding and the replay's background all read this)."""
    held = contention(
        cpu_readings({0: 0.52}, {}), process_readings([(7, 0.05, 0)]), NAMES, pd.DataFrame(),
        own(0.5), (0, 1000 * MS), (0,),
    )  # fmt: skip
    assert held is not None
    assert held.others_core_s == pytest.approx(0.02)
    assert held.tftrace_core_s == pytest.approx(0.05)
    assert held.neighbours_core_s == 0.0
    with_burner = contention(
        cpu_readings({0: 1.0}, {}), process_readings([(42, 0.4, 0), (7, 0.05, 0)]), NAMES,
        pd.DataFrame(), own(0.5), (0, 1000 * MS), (0,),
    )  # fmt: skip
    assert with_burner is not None and with_burner.neighbours_core_s == pytest.approx(0.45)


def test_no_readings_in_the_window_is_none():
    readings, none = cpu_readings({0: 1.0}, {}), process_readings([])

    def held(cpus: pd.DataFrame, window: tuple[int, int]):
        return contention(cpus, none, NAMES, pd.DataFrame(), own(0), window, (0,))

    assert held(readings, (2000 * MS, 3000 * MS)) is None
    assert held(readings.iloc[:0], (0, MS)) is None


def test_growth_is_linear_between_readings_and_flat_outside():
    t, value = np.array([10, 20]), np.array([0, 100])
    assert interval_growth(t, value, np.array([0, 10, 15, 20, 30])).tolist() == [0, 50, 50, 0]
    assert interval_growth(np.zeros(0), np.zeros(0), np.array([0, 1])).tolist() == [0]


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


def _analysed(held=None, manifest=None):
    """The waiting-thread run analysed over its 100 ms, its headline split by ``held``."""
    run = _waiting_thread_run()
    if manifest:
        run = replace(run, manifest=Manifest.from_json(manifest))
    window = (0, 100 * MS)  # nothing is traced: the window is given
    use = core_use(run, window, pool_concurrencies(run, window), held=held)
    return run, replace(analyze(run), window=window, contention=held, core_use=use)


def _held_by(cpus: pd.DataFrame, processes: pd.DataFrame, cgroup=None, quota=None):
    held = contention(
        cpus, processes, NAMES, pd.DataFrame() if cgroup is None else cgroup, own(0.6),
        (0, 100 * MS), (0, 1), quota=quota,
    )  # fmt: skip
    assert held is not None
    return held


T100 = np.arange(0, 101, 10, dtype=np.int64) * MS


def _cpus(other: float = 0.0, steal: float = 0.0) -> pd.DataFrame:
    """CPU 0 busy with another process (``other`` of a core) and stolen ``steal``; CPU 1 ours."""
    frame = pd.DataFrame({"t_ns": np.r_[T100, T100], "cpu": np.repeat([0, 1], len(T100))})
    frame["busy_ns"] = np.r_[(T100 * other).astype(np.int64), T100 * 6 // 10]
    frame["steal_ns"] = np.r_[(T100 * steal).astype(np.int64), np.zeros(len(T100), np.int64)]
    return frame


def _burner(cores: float) -> pd.DataFrame:
    return pd.DataFrame(
        {"t_ns": T100, "pid": 42, "cpu_ns": (T100 * cores).astype(np.int64), "processor": 0}
    )


def test_another_process_on_the_cores_is_named_with_its_pid_and_core_seconds():
    run, analysis = _analysed(_held_by(_cpus(other=1.0), _burner(1.0)))
    (found,) = other_processes_take_cores(run, analysis)
    assert "burner (pid 42) 0.10 core-s" in found.message
    assert found.setting is None
    assert found.evidence["waited_behind_core_s"] == pytest.approx(0.04)
    # alone, or beside a process that did not keep this one waiting: nothing
    assert other_processes_take_cores(*_analysed(_held_by(_cpus(), _burner(0.0)))) == []
    assert other_processes_take_cores(*_analysed()) == []


def test_steal_is_said_without_a_setting():
    run, analysis = _analysed(_held_by(_cpus(steal=0.3), _burner(0.0)))
    (found,) = steal_time(run, analysis)
    assert found.evidence["steal_share"] == pytest.approx(0.15)  # 0.03 of 0.2 core-s
    assert found.setting is None
    assert steal_time(*_analysed(_held_by(_cpus(steal=0.05), _burner(0.0)))) == []


def test_a_throttling_quota_advises_pools_that_fit_it():
    cgroup = pd.DataFrame(
        {
            "t_ns": T100,
            "periods": np.arange(len(T100)),
            "throttled_periods": np.arange(len(T100)) // 2,
            "throttled_ns": T100 // 10,
        }
    )
    pools = {"intra_op": {"size": 4, "source": "default"}, "inter_op": {"size": 1}}
    manifest = {"host": {"cpu_affinity": [0, 1]}, "pools": pools}
    held = _held_by(_cpus(), _burner(0.0), cgroup, quota=1.5)
    run, analysis = _analysed(held, manifest)
    (found,) = quota_throttles(run, analysis)
    assert (found.evidence["periods"], found.evidence["throttled_periods"]) == (10, 5)
    assert found.setting is not None
    assert (found.setting.intra, found.setting.inter) == (1, None)
    # the headline: the wait while throttled is the quota's, not a setting's to win
    assert _core_s(analysis.core_use, "quota") == pytest.approx(0.01)
    fewer = cgroup.assign(throttled_periods=0)
    assert quota_throttles(*_analysed(_held_by(_cpus(), _burner(0.0), fewer, 1.5), manifest)) == []


def test_a_library_pool_beside_tf_pools_gets_the_fix_the_data_favours():
    run, analysis = _analysed()
    cpu = pd.DataFrame(
        {
            "pool": [Pool.BLAS_OPENMP.value, Pool.INTRA_OP.value],
            "threads": [1, 2],
            "cpu_s": [0.05, 0.02],
            "busy_s": [0.0, 0.02],
            "cpu_per_busy": [np.nan, 1.0],
            "wait_s": [0.02, 0.01],
            "outside_s": [0.05, 0.0],
        }
    )
    threads = run.threads.copy()
    threads.loc[0, "pool"] = Pool.BLAS_OPENMP.value
    threads["evidence"] = "started in libopenblas64_p-r0-0cf96a72.3.23.dev.so"
    pools = {"intra_op": {"size": 2}, "inter_op": {"size": 2}}
    run = replace(run, threads=threads, manifest=Manifest.from_json({"pools": pools}))
    # the library's threads waited 0.02 s for the cores TF's held (0.01 s): TF's pools shrink
    (tf_first,) = library_pool_crowds_cores(run, replace(analysis, cpu=cpu))
    assert tf_first.id == "tf-pools-beside-library-pool"
    assert (tf_first.setting.intra, tf_first.setting.inter) == (1, 1)
    assert "Else OPENBLAS_NUM_THREADS=1" in tf_first.action
    # TF's threads waited more: the library's variable at 1, TF's pools named as the other fix
    (library,) = library_pool_crowds_cores(
        run, replace(analysis, cpu=cpu.assign(wait_s=[0.01, 0.02]))
    )
    assert library.id == "library-pool-crowds-cores"
    assert dict(library.setting.env) == {"OPENBLAS_NUM_THREADS": "1"}
    assert (library.setting.intra, library.setting.inter) == (None, None)
    assert "Else one thread per TF pool" in library.action
    # TF's pools at 1 already: only the library's variable is left to shrink
    ones = Manifest.from_json({"pools": {"intra_op": {"size": 1}, "inter_op": {"size": 1}}})
    (only,) = library_pool_crowds_cores(replace(run, manifest=ones), replace(analysis, cpu=cpu))
    assert only.id == "library-pool-crowds-cores" and "Else" not in only.action
    assert library_variable("started in libgomp.so.1") == "OMP_NUM_THREADS"
    quiet = cpu.assign(wait_s=[0.001, 0.001])
    assert library_pool_crowds_cores(run, replace(analysis, cpu=quiet)) == []


def test_a_process_born_between_readings_counts_from_its_birth():
    """First read at 500 ms with 0.45 s of CPU: born at 50 ms, it ran all of that in the window."""
    late = pd.DataFrame({"t_ns": T[5:], "pid": 5, "processor": 0})
    late["cpu_ns"] = (T[5:] - 50 * MS).astype(np.int64)
    names = pd.DataFrame(
        {"pid": [5], "name": ["short"], "role": ["other"], "started_ns": [50 * MS]}
    )
    table = process_table(late, names, (0, 1), 0, 1000 * MS)
    assert table["core_s"].tolist() == pytest.approx([0.95])
    unborn = process_table(late, names.drop(columns="started_ns"), (0, 1), 0, 1000 * MS)
    assert unborn["core_s"].tolist() == pytest.approx([0.5])  # seen from its first reading only


def test_a_pid_taken_again_counts_both_processes():
    """One pid: a process that ran 0.3 s, then, after a fall of its count at 400 ms, a new one
    that had run 0.1 s when first read and ran all of the remaining 0.5 s beside it."""
    t = T[:11]
    count = np.where(t < 400 * MS, t * 0.75, t - 400 * MS + 100 * MS)
    one = pd.DataFrame({"t_ns": t, "pid": 9, "processor": 1, "cpu_ns": count.astype(np.int64)})
    table = process_table(one, pd.DataFrame(columns=["pid", "name", "role"]), (0, 1), 0, 1000 * MS)
    # 0 to 300 ms: 0.225 s; the reading after the fall adds the new count (0.1 s), then 0.6 s
    assert table["core_s"].tolist() == pytest.approx([0.225 + 0.1 + 0.6])


def test_a_process_name_in_a_finding_is_shown_not_obeyed_in_the_terminal():
    """A process that names itself with an escape sequence and a forged line: the terminal
    shows both as text."""
    from tftrace.analysis.render.terminal import render_text

    hostile = NAMES.assign(name=["burn\x1b[2J\n- CRITICAL", "tftrace", "elsewhere"])
    run, analysis = _analysed(
        contention(
            _cpus(other=1.0), _burner(1.0), hostile, pd.DataFrame(), own(0.6),
            (0, 100 * MS), (0, 1),
        )
    )  # fmt: skip
    found = other_processes_take_cores(run, analysis)
    text = render_text(replace(analysis, findings=tuple(found)))
    assert "burn\\x1b[2J\\n- CRITICAL (pid 42)" in text
    assert "\x1b[2J" not in text and "\n- CRITICAL" not in text
