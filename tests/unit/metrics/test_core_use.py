"""Core use on hand-built runs: the headline's arithmetic, the idle causes, the Amdahl bound,
underused-cores on the 16-core case from the trace alone, and what a bare trace cannot check."""

from __future__ import annotations

import numpy as np
import pytest

from builders import MS, cpu_samples_table, events_table, hand_built_run, make_run, threads_table
from tftrace.analysis.analyze import analyze
from tftrace.analysis.metrics.concurrency import pool_concurrencies
from tftrace.analysis.metrics.core_use import core_use
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.trace_facts import FROM_TRACE, with_trace_facts
from tftrace.errors import TftraceError


def _core_s(use, cause: str) -> float:
    return float(use.causes.set_index("cause").loc[cause, "core_s"])


def test_headline_and_causes_of_the_hand_built_run():
    """Main thread on a CPU 0-10 and 60-70 ms (the only CPU: 20 ms of 2 x 100 ms); 10-20 eager
    dispatch; 20-60 one op (0.75 Eigen workers on average: a small op) whose closures run 30-50:
    alone on its thread 20-30 and 50-60, a core free (too small to split), its thread and a
    worker at work 30-50 (chain); 70-100 nothing. Idle core-time 180 ms: Python 2 x 10,
    dispatch 20, too small 2 x 20, chain 2 x 20, rest 60."""
    run = hand_built_run()
    window = (0, 100 * MS)  # an analysis window is cut to the trace: 10-100 ms here
    use = core_use(run, window, pool_concurrencies(run, window))
    assert use.window == (0, 100 * MS)
    assert use.busy_source == "os sampler" and use.cores == 2
    assert use.busy_core_s == pytest.approx(0.020)
    assert use.mean_busy == pytest.approx(0.2)
    assert use.idle_core_s == pytest.approx(0.180)
    expected = {"python": 0.020, "dispatch": 0.020, "too_small": 0.040, "chain": 0.040}
    expected["unexplained"] = 0.060
    for cause in ("input", "waiting", "run_queue"):
        expected[cause] = 0.0
    for cause, core_s in expected.items():
        assert _core_s(use, cause) == pytest.approx(core_s, abs=1e-9), cause
    assert use.causes["share"].sum() == pytest.approx(1.0)
    assert use.main_cause() == "too_small"  # a tie goes to the cause listed first
    # By the trace: the op 20-60 ms, its workers 30-50 (capped at 2 cores), Python 0-10, 60-70.
    assert use.trace_busy_core_s == pytest.approx(0.080)
    # Amdahl: 20 ms of Python stay, the other 80 ms hold no CPU at all: at most 100/20 = 5x.
    assert use.fixed_share == pytest.approx(0.2)
    assert use.max_speedup == pytest.approx(5.0)
    assert use.to_json()["mean_busy_cores"] == pytest.approx(0.2)
    assert analyze(run).to_json()["core_use"]["cores"] == 2


def test_run_queue_wait_takes_the_idle_cores_first():
    """One Python thread on a CPU 60 % of the time and runnable but waiting the rest, on 2
    cores: 0.6 core busy, 0.4 core of the idle 1.4 is run-queue wait; underused-cores counts
    the wait as demand: it wanted 1.0 of 2 cores (50 %), not the 0.6 it got (30 %)."""
    threads = threads_table([Pool.PYTHON_MAIN], 100 * MS)
    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    samples = cpu_samples_table(0, 100, t, t * 6 // 10)
    samples["wait_ns"] = t * 4 // 10
    run = make_run(
        threads,
        events_table([(0, "python", EventKind.ANNOTATION.value, 0, 100 * MS, None, None)]),
        samples=samples,
        manifest={"host": {"cpu_affinity": [0, 1]}},
    )
    analysis = analyze(run, window="all")
    assert analysis.core_use.busy_core_s == pytest.approx(0.06)
    assert _core_s(analysis.core_use, "run_queue") == pytest.approx(0.04)
    assert _core_s(analysis.core_use, "python") == pytest.approx(0.10)
    assert analysis.core_use.idle_core_s == pytest.approx(0.14)
    (found,) = [f for f in analysis.findings if f.id == "underused-cores"]
    assert found.evidence["use"] == pytest.approx(0.3)
    assert found.evidence["demand"] == pytest.approx(0.5)


def sixteen_core_trace():
    """A bare trace of a 16-core machine: 16 tf_Compute and 16 Eigen lines; the main thread
    inside one tf.function call throughout 0-1000 ms; 60 ops of 1 ms, one at a time, each on a
    tf_Compute thread with two Eigen workers busy for it: inter-op 0.06 and intra-op 0.12 busy
    threads on average."""
    pools = [Pool.PYTHON_OTHER] + [Pool.INTER_OP] * 16 + [Pool.INTRA_OP] * 16
    op, call = EventKind.OP.value, EventKind.CALL.value
    rec, start, stop = (
        EventKind.RECORD.value,
        EventKind.REGION_START.value,
        EventKind.REGION_STOP.value,
    )
    rows = [(0, "__inference_train_step_1", call, 0, 1000 * MS, None, None)]
    flow = 1
    for k in range(60):
        s, e = (16 * k + 5) * MS, (16 * k + 6) * MS
        compute = 1 + k % 16
        rows.append((compute, f"conv{k}:Conv2D", op, s, e, None, None))
        for worker in (17 + (2 * k) % 16, 18 + (2 * k) % 16):
            rows += [
                (compute, "ThreadpoolListener::Record", rec, s, s, flow, None),
                (worker, "ThreadpoolListener::StartRegion", start, s, s, None, flow),
                (worker, "ThreadpoolListener::StopRegion", stop, e, e, None, None),
            ]
            flow += 1
    return make_run(threads_table(pools, 1000 * MS), events_table(rows))


def test_underused_cores_fires_on_the_16_core_case_from_the_trace_alone():
    run = sixteen_core_trace()
    analysis = analyze(run, window="all")
    pools = analysis.pools.set_index("pool")["mean"]
    assert pools["inter-op"] == pytest.approx(0.06)
    assert pools["intra-op"] == pytest.approx(0.12)
    use = analysis.core_use
    assert use.busy_source == "trace"
    assert use.cores == 16 and use.cores_basis.startswith("assumed")
    assert use.mean_busy == pytest.approx(0.18)  # the op's thread and its two workers
    assert use.main_cause() == "dispatch"
    assert use.ops == 60 and use.mean_op_us == pytest.approx(1000)
    assert any(FROM_TRACE in note and "intra-op 16" in note for note in use.notes)
    (finding,) = [f for f in analysis.findings if f.id == "underused-cores"]
    assert "0.18 of 16" in finding.message and "dispatch" in finding.message
    assert "no OS sampler" in finding.message
    assert "underused-cores" in [f["id"] for f in analysis.to_json()["findings"]]
    given = analyze(run, window="all", cpus=16)
    assert given.core_use.cores_basis == "given (--cpus)"
    assert "underused-cores" in {f.id for f in given.findings}


def test_bare_trace_says_what_it_cannot_check():
    run = sixteen_core_trace()
    lines = analyze(run, window="all").not_checked
    assert "eigen-spin: needs the OS sampler (not in a bare trace)" in lines
    assert any(
        line.startswith("idle-cores-while-work-waited: needs the CPU count") for line in lines
    )
    assert any(
        line.startswith("threading-set-too-late: needs the run's manifest") for line in lines
    )
    with_cpus = analyze(run, window="all", cpus=16).not_checked
    assert not any("CPU count" in line for line in with_cpus)
    assert analyze(hand_built_run()).not_checked == ()


def test_pool_sizes_from_the_trace_and_cpus_given():
    run = with_trace_facts(sixteen_core_trace(), cpus=16)
    assert run.manifest.pool("intra_op").size == 16
    assert run.manifest.pool("inter_op").source == FROM_TRACE
    assert run.manifest.usable_cpus == 16 and not run.manifest.exists
    recorded = hand_built_run()
    assert with_trace_facts(recorded) is recorded  # a manifest's own sizes stand
    for bad in (0, -2, 1.5, True):
        with pytest.raises(TftraceError):
            with_trace_facts(recorded, cpus=bad)
