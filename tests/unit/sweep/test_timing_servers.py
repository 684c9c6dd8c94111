"""Servers in a sweep, on hand-built step-timer rows: the server/loop decision, the window
after the warm-up, requests/s and latency percentiles, the objective each run is compared by,
several copies at once, and a finding's verification by its objective."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity, Status
from tftrace.analysis.model.timed_steps import timed_steps_frame
from tftrace.analysis.sweep.result import build
from tftrace.analysis.sweep.runs import time_copies, time_run
from tftrace.analysis.sweep.stats import summarize, verdict
from tftrace.analysis.sweep.timing import (
    Measure,
    Objective,
    TimingError,
    is_server,
    measure,
)
from tftrace.analysis.sweep.verify import figures, judge, mark
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.sweep import (
    Setting,
    SweepError,
    TimedRun,
    instance_grid,
    parse_instances,
    shares,
)

MS = 1_000_000
US = 1_000
COLUMNS = ["kind", "name", "step_num", "thread", "start_ns", "end_ns", "cpu0_ns", "cpu1_ns"]
REPORT = {
    "code_start_anchor": {"monotonic_ns": 0},
    "end_anchor": {"monotonic_ns": 10_000 * MS},
    "code_start_cpu_ns": 0,
    "code_end_cpu_ns": 4_000 * MS,
}


def _frame(rows: list[list], main: int = 1) -> pd.DataFrame:
    return timed_steps_frame({"rows": rows, "main_thread": main}, 0, [])


def call(thread: int, start: float, end: float, name: str = "serve") -> list:
    """A tf.function call from ``start`` to ``end`` ms; the process CPU clock at its end is
    half the wall clock (so the CPU over a span is half of it)."""
    s, e = int(start * MS), int(end * MS)
    return ["tf.function", name, None, thread, s, e, 0, e // 2]


def server_rows(clients: int = 4, requests: int = 50, warmup: int = 3, ms: float = 2) -> list:
    """``warmup`` calls on the main thread (1) 0-100 ms (the first traces: 0-70 ms), then
    ``clients`` threads (10, 11, ...) that each make ``requests`` calls of ``ms`` back to
    back, staggered by 0.5 ms: calls of different threads overlap."""
    rows = [call(1, 0, 70)] + [call(1, 70 + 15 * i, 85 + 15 * i) for i in range(warmup - 1)]
    for c in range(clients):
        t = 100 + 0.5 * c
        rows += [call(10 + c, t + ms * i, t + ms * (i + 1)) for i in range(requests)]
    return rows


def test_calls_on_several_threads_in_flight_together_are_a_server():
    assert is_server(_frame(server_rows()))
    # the same calls one thread after the other: never two in flight at once
    rows = [call(1, 0, 70)]
    for c in range(3):
        rows += [call(10 + c, 1000 * (c + 1) + 2 * i, 1000 * (c + 1) + 2 * i + 2) for i in range(9)]
    assert not is_server(_frame(rows))
    # one busy thread, and a helper with fewer than 5 calls that overlap it: a loop
    rows = [call(1, 10 * i, 10 * i + 8) for i in range(20)] + [call(2, 5, 50), call(2, 60, 95)]
    assert not is_server(_frame(rows))
    # a thread's own nested rows never make it a server (one thread)
    nested = [["annotation", "t", i, 1, i * MS, (i + 5) * MS, 0, 0] for i in range(10)]
    assert not is_server(_frame(nested))
    # touching is not overlapping: the next call starts as the other thread's ends
    rows = []
    for i in range(10):
        rows += [call(1, 4 * i, 4 * i + 2), call(2, 4 * i + 2, 4 * i + 4)]
    assert not is_server(_frame(rows))


def test_server_window_requests_rate_and_latency():
    """4 clients x 50 calls of 2 ms after 3 warm-up calls: the window starts at the end of the
    third warm-up call (100 ms) and ends with the last call (100 + 1.5 + 100 ms)."""
    timing = measure(_frame(server_rows()), REPORT, Measure.AUTO, warmup=3)
    assert timing.server
    assert timing.steps == 4 * 50  # the warm-up calls are not requests
    assert timing.seconds == pytest.approx(0.1015)
    assert timing.per_second == pytest.approx(200 / 0.1015)
    assert timing.per_unit == pytest.approx(0.1015 / 200)
    assert timing.cpu_seconds == pytest.approx(0.1015 / 2)
    assert timing.latency is not None and timing.latency.p50_ms == pytest.approx(2.0)
    assert timing.window_ns == (100 * MS, int(201.5 * MS))
    assert timing.basis == (
        "server: tf.function 'serve' calls on every thread as requests, after each "
        "function's first 3 calls"
    )
    # with the default warm-up (the first call only) the main thread's 2 other calls count
    one = measure(_frame(server_rows()), REPORT, Measure.AUTO)
    assert one.steps == 202 and one.seconds == pytest.approx(0.1315)
    assert one.basis.endswith("after each function's first call")


def test_latency_percentiles_of_the_requests_in_the_window():
    """Two threads; after the warm-up, 100 requests whose latencies are 1, 2, ..., 100 ms
    (numpy's percentiles: linear between the closest ranks)."""
    rows = [call(1, 0, 10)]
    t = 10.0
    for i in range(100):
        rows.append(call(1 + i % 2, t, t + i + 1))
        t += 0.5 if i % 2 == 0 else i + 1.5
    timing = measure(_frame(rows), REPORT, Measure.AUTO)
    assert timing.server and timing.steps == 100
    latency = timing.latency
    assert latency is not None
    assert latency.p50_ms == pytest.approx(50.5)
    assert latency.p90_ms == pytest.approx(90.1)
    assert latency.p99_ms == pytest.approx(99.01)
    assert latency.max_ms == pytest.approx(100.0)
    assert timing.figure(Objective.P50) == pytest.approx(0.0505)
    assert timing.figure(Objective.P99) == pytest.approx(0.09901)
    assert timing.figure(Objective.THROUGHPUT) == pytest.approx(timing.seconds / 100)


def test_the_warmup_is_each_functions_first_calls_and_requests_are_those_that_end_after():
    """Two functions on two client threads: 'a' traces first (0-50 ms), 'b' later (0-80 ms).
    The window starts at the latest first-call end, 80 ms: a's calls that ended before it are
    not requests; a call in flight at 80 ms that ends after it is one. A function called once
    (an export at the end) is warm-up only: it neither counts nor moves the window."""
    rows = [call(1, 0, 50, "a"), call(2, 0, 80, "b")]
    rows += [call(1, 50 + 10 * i, 58 + 10 * i, "a") for i in range(10)]  # ends 58 ... 148
    rows += [call(2, 80 + 10 * i, 85 + 10 * i, "b") for i in range(10)]  # ends 85 ... 175
    rows.append(call(1, 300, 900, "export"))
    timing = measure(_frame(rows), REPORT, Measure.AUTO)
    assert timing.server
    # a: the calls ending at 88, 98, ..., 148 (7, the one from 70 to 78 ended before); b: 10
    assert timing.steps == 7 + 10
    assert timing.seconds == pytest.approx((175 - 80) / 1e3)
    assert timing.basis.startswith("server: tf.function 'a', 'b' calls on every thread")


def test_annotated_requests_win_over_function_calls_and_a_loop_keeps_its_timing():
    rows = [call(1, 0, 10)]
    for i in range(20):  # Trace('request', step_num=i) blocks on two threads at once
        t = 10 + 5 * (i // 2)
        rows.append(["annotation", "request", i, 1 + i % 2, t * MS, (t + 4) * MS, 0, t * MS])
    rows += [call(1 + i % 2, 10 + i, 11 + i) for i in range(20)]
    timing = measure(_frame(rows), REPORT, Measure.AUTO)
    # blocks 0 and 1 start and end together: the first is the warm-up, the other not after it
    assert timing.server and timing.steps == 18
    assert timing.basis.startswith("server: Trace('request', step_num=...) blocks")
    # a loop: one thread's steps, timed from the end of the first to the end of the last
    loop = [call(1, 0, 900)] + [call(1, 900 + 100 * i, 1000 + 100 * i) for i in range(3)]
    timing = measure(_frame(loop), REPORT, Measure.AUTO)
    assert not timing.server
    assert timing.steps == 3 and timing.per_unit == pytest.approx(0.1)
    assert timing.basis == "steady state over tf.function 'serve' calls"
    # a loop's latency is its steady steps' own durations
    assert timing.latency is not None and timing.latency.p99_ms == pytest.approx(100.0)


def test_latency_objectives_need_steps():
    rows = [
        ["annotation", "measure", None, 1, 0, 200 * MS, 0, 100 * MS],
        ["annotation", "measure", None, 1, 500 * MS, 800 * MS, 100 * MS, 400 * MS],
    ]
    timing = measure(_frame(rows), REPORT, Measure.AUTO, marker="measure")
    assert timing.figure(Objective.THROUGHPUT) == pytest.approx(0.5)
    with pytest.raises(TimingError, match="--objective p99 needs steps or requests"):
        timing.figure(Objective.P99)


# ---------------------------------------------------------------- runs, copies, the result


def _run_dir(path: Path, rows: list[list], cpus: list[int], intra: int = 1) -> Path:
    (path / "workload").mkdir(parents=True)
    steps = {"columns": COLUMNS, "rows": rows, "main_thread": 1}
    (path / "workload" / "steps.json").write_text(json.dumps(steps))
    (path / "workload" / "report.json").write_text(json.dumps(REPORT))
    return path


def _manifest(cpus: list[int], intra: int) -> Manifest:
    return Manifest.from_json(
        {
            "host": {"cpu_affinity": cpus},
            "pools": {"intra_op": {"size": intra}, "inter_op": {"size": len(cpus)}},
        }
    )


def _timed(path: Path, setting: Setting, rows: list[list], cpus: list[int], copy=None):
    _run_dir(path, rows, cpus)
    manifest = _manifest(cpus, setting.intra or len(cpus))
    return TimedRun(setting, 0, path, 5.0, 4.0, manifest, 0, copy, tuple(cpus))


def test_copies_sum_their_rates_and_pool_their_latencies(tmp_path: Path):
    """Two copies, each its own server: 200 requests over 0.1015 s, and the other slower
    (every call 4 ms: 200 over 0.2015 s). The run's rate is the sum of theirs, its latency
    percentiles are over all 400 requests, each copy keeps its own."""
    slow = server_rows(ms=4)
    setting = Setting(1, 1, 2, 1)
    copies = [
        _timed(tmp_path / "c0", setting, server_rows(), [0], 0),
        _timed(tmp_path / "c1", setting, slow, [1], 1),
    ]
    row = time_copies(copies, Measure.AUTO, None, 3)
    fast_rate, slow_rate = 200 / 0.1015, 200 / 0.2015
    assert [c["per_s"] for c in row["copies"]] == pytest.approx([fast_rate, slow_rate])
    assert row["per_s"] == pytest.approx(fast_rate + slow_rate)
    assert row["time_s"] == pytest.approx(1 / (fast_rate + slow_rate))
    assert row["steps"] == 400 and row["server"] and row["instances"] == 2
    assert row["p50_ms"] == pytest.approx(3.0)  # half the requests take 2 ms, half 4 ms
    assert [c["p50_ms"] for c in row["copies"]] == pytest.approx([2.0, 4.0])
    assert [c["cpus"] for c in row["copies"]] == [[0], [1]]
    assert row["together"] == pytest.approx(0.1015 / 0.2015)
    p99 = time_copies(copies, Measure.AUTO, None, 3, Objective.P99)
    assert p99["time_s"] == pytest.approx(0.004)


def test_a_servers_result_is_compared_by_its_objective(tmp_path: Path, capsys):
    """One process at 2000 requests/s (p99 2 ms) against two copies at 1500 each (p99 4 ms):
    by throughput the copies win, by p99 the one process."""

    def rows(per_s: float, latency_ms: float) -> list[dict]:
        return [
            {
                "intra": 2 if k == 1 else 1,
                "inter": 2 if k == 1 else 1,
                "instances": k,
                "cores": 2 // k,
                "round": r,
                "time_s": 1 / (rate * (1 + 0.01 * r)),
                "span_s": 1.0,
                "steps": 1000,
                "cpu_util": 0.9,
                "basis": "server: tf.function 'serve' calls",
                "wall_s": 5.0,
                "process_cpu_s": None,
                "path": str(tmp_path),
                "server": True,
                "per_s": rate * (1 + 0.01 * r),
                "p50_ms": lat / 2,
                "p90_ms": lat * 0.9,
                "p99_ms": lat * (1 + 0.01 * r),
                "max_ms": lat * 2,
                "intra_effective": 2,
                "intra_source": "env",
                "intra_calls": [],
                "inter_effective": 2,
                "inter_source": "env",
                "inter_calls": [],
                "copies": [
                    {"copy": c, "path": str(tmp_path), "cpus": [c], "per_s": rate / k}
                    | {"p50_ms": lat / 2, "p90_ms": lat, "p99_ms": lat, "max_ms": lat}
                    for c in range(k)
                ],
            }
            for k, rate, lat in ((1, per_s, latency_ms), (2, 3000.0, 4.0))
            for r in range(3)
        ]

    runs = rows(2000.0, 2.0)
    result = build(runs, 2, (2, 2, 1), ["server.py"])
    assert result.server and result.instances and result.unit == "s/request"
    assert result.verdict.kind == "faster"
    assert result.recommended == Setting(1, 1, 2, 1)
    assert result.recommended.label() == "2 instances x 1 core · intra 1 · inter 1"
    lines = result.recommendation
    assert lines[0].startswith(
        "Use 2 instances x 1 core · intra 1 · inter 1: 1.50x the requests/s of "
        "1 instance x 2 cores · intra 2 · inter 2"
    )
    assert lines[0].endswith("objective: throughput (requests/s).")
    # by p99, as the runs' time
    for r in runs:
        r["time_s"] = r["p99_ms"] / 1e3
    by_p99 = build(runs, 2, (2, 2, 1), ["server.py"], "p99")
    assert by_p99.unit == "s (p99 latency)" and by_p99.verdict.kind == "no-difference"
    assert by_p99.recommendation[0].startswith("No significant difference in p99 latency")
    from tftrace.analysis.sweep.report import render, to_json

    render(by_p99)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "decided by: p99 latency" in out and "p99 ms*" in out
    assert "each copy: CPU 0: 1500 req/s" in out
    data = to_json(by_p99)
    assert (data["workload"], data["objective"]) == ("server", "p99")
    base, two = data["settings"]
    assert base["requests_per_s"] == pytest.approx(2020.0) and two["p99_ms"] == pytest.approx(4.04)
    assert [c["cpus"] for c in two["copies"]] == [[0], [1]]
    assert data["verdict"]["recommended"] == {"intra": 2, "inter": 2, "instances": 1, "cores": 2}
    assert data["runs"][0]["requests"] == 1000 and "steps" not in data["runs"][0]


def test_a_loop_compared_by_throughput_shows_what_it_always_did(tmp_path: Path):
    loop = [call(1, 0, 900)] + [call(1, 900 + 100 * i, 1000 + 100 * i) for i in range(3)]
    run = _timed(tmp_path / "l", Setting(1, None), loop, [0, 1])
    row = time_run(run, Measure.AUTO, None)
    assert row["time_s"] == pytest.approx(0.1) and not row["server"]
    from tftrace.analysis.sweep.report import to_json

    result = build([row, {**row, "intra": 2}], 2, (1, None), ["loop.py"])
    assert not result.shows_latency and result.unit == "s/step"
    data = to_json(result)
    assert "objective" not in data and "workload" not in data
    for key in ("per_s", "p50_ms", "steps_per_s", "server"):
        assert key not in data["settings"][0] and key not in data["runs"][0]
    # the same loop by its p99 step time: the step's own durations
    by_p99 = build(
        [time_run(run, Measure.AUTO, None, 1, Objective.P99)], 2, (1, None), ["l"], "p99"
    )
    assert by_p99.shows_latency and to_json(by_p99)["settings"][0]["steps_per_s"] == 10.0


def test_a_timed_run_with_damaged_step_rows_times_nothing_rather_than_part(tmp_path: Path):
    """The sweep reads its runs' steps.json by the run directory's checks: a row of another
    shape is not dropped in silence, which would time the run on the steps left."""
    loop = [call(1, 0, 900)] + [call(1, 900 + 100 * i, 1000 + 100 * i) for i in range(3)]
    loop[2] = loop[2][:5]  # a row cut short
    run = _timed(tmp_path / "l", Setting(1, None), loop, [0, 1])
    with pytest.raises(TimingError, match=r"1 of 4 records left out .*rows\[2\]"):
        time_run(run, Measure.AUTO, None)


def test_fewer_copies_win_a_tie():
    """Two settings within noise of each other: one process is kept over two copies, even
    with the same number of threads."""
    runs = pd.DataFrame(
        [
            {"intra": a, "inter": a, "instances": k, "cores": 2 // k, "round": r}
            | {"time_s": t, "cpu_util": 0.5}
            for k, a, ts in ((2, 1, [1.0, 1.01, 1.02]), (1, 2, [1.005, 1.015, 0.995]))
            for r, t in enumerate(ts)
        ]
    ).astype({"intra": "Int64", "inter": "Int64", "instances": "Int64", "cores": "Int64"})
    table = summarize(runs, (1, 1, 2))
    v = verdict(table, cpus=2)
    assert v.kind == "no-difference" and v.recommended == 0
    runs.loc[runs["instances"] == 1, "time_s"] = [0.5, 0.51, 0.52]
    runs.loc[runs["instances"] == 2, "time_s"] = [0.1, 0.101, 0.102]
    table = summarize(
        pd.concat([runs, runs.assign(instances=4, cores=1, time_s=[0.1, 0.1, 0.101] * 2)]),
        (1, 1, 2),
    )
    picked = verdict(table, cpus=4)
    assert table.loc[picked.recommended, "instances"] == 2  # 4 copies are as fast: more copies


def test_instance_counts_shares_and_settings():
    assert parse_instances(None, 2) is None
    assert parse_instances("2", 2) == [1, 2]  # one process on all the CPUs always comes first
    assert parse_instances("4,2,2", 4) == [1, 4, 2]
    with pytest.raises(SweepError, match="--instances 3: more copies than the 2 CPUs"):
        parse_instances("1,3", 2)
    for bad in ("0", "x"):
        with pytest.raises(SweepError, match="--instances"):
            parse_instances(bad, 2)
    assert shares([3, 0, 2, 1], 2) == [(0, 1), (2, 3)]
    assert shares(range(6), 4) == [(0,), (1,), (2,), (3,)]  # 4 and 5 stay unused
    assert instance_grid([1, 2], [None], [None], 2) == [Setting(2, 2, 1, 2), Setting(1, 1, 2, 1)]
    assert instance_grid([1, 2], [1, 2], [None], 4) == [
        Setting(1, 4, 1, 4),
        Setting(2, 4, 1, 4),
        Setting(1, 2, 2, 2),
        Setting(2, 2, 2, 2),
    ]
    s = Setting(1, 1, 2, 1)
    assert s.env() == {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
    assert s.slug() == "2x1cpu-intra1-inter1" and s.threads(2) == 4
    assert s.to_json() == {"intra": 1, "inter": 1, "instances": 2, "cores": 1}
    assert Setting(1, None).to_json() == {"intra": 1, "inter": None}


def test_the_library_call_refuses_what_it_cannot_count(tmp_path: Path):
    from tftrace.analysis.sweep.session import sweep

    script = tmp_path / "workload.py"
    script.write_text("")
    out = tmp_path / "sweep"
    cpus = len(__import__("os").sched_getaffinity(0))
    cases = [
        ({"objective": "p95"}, "--objective 'p95': give one of throughput, p50, p99"),
        ({"objective": "p99", "marker": "m"}, "--objective p99 takes percentiles"),
        ({"objective": "p50", "measure": "script"}, "not with --measure script"),
        ({"instances": [2], "measure": "process"}, "--instances sums steps or requests"),
        ({"instances": [cpus + 1]}, f"--instances {cpus + 1}: more copies than the {cpus} CPUs"),
    ]
    for kwargs, message in cases:
        with pytest.raises(SweepError, match=message.replace("(", r"\(")):
            sweep(script, output=out, **kwargs)
    assert not out.exists()


# ---------------------------------------------------------------- verification by objective


@dataclass(frozen=True)
class _Findings:
    """What ``mark`` reads of an Analysis: its findings."""

    findings: tuple[Finding, ...]


def _verify_runs() -> pd.DataFrame:
    """The run's own setting (intra 2, inter 2) and the advised one (intra 1, inter 2), seven
    runs each: the advice serves 20 % more requests/s, with a 10 % higher p99."""
    rows = []
    for r in range(7):
        wobble = 1 + 0.002 * r
        for intra, rate, p99 in ((2, 1000.0, 5.0), (1, 1200.0, 5.5)):
            rows.append(
                {"intra": intra, "inter": 2, "round": r, "time_s": 1 / (rate * wobble)}
                | {"per_s": rate * wobble, "p50_ms": p99 / 2, "p99_ms": p99 * wobble}
            )
    return pd.DataFrame(rows).astype({"intra": "Int64", "inter": "Int64"})


def test_each_finding_is_judged_by_its_objective():
    runs, now = _verify_runs(), Setting(2, 2)
    assert figures(runs, Setting(1, 2), "throughput") == pytest.approx(
        [1 / (1200 * (1 + 0.002 * r)) for r in range(7)]
    )
    assert figures(runs, Setting(1, 2), "p99")[0] == pytest.approx(0.0055)
    assert figures(runs, Setting(1, 2), None) == list(runs[runs["intra"] == 1]["time_s"])

    def finding(name: str, expect: Expect, objective: str | None) -> Finding:
        setting = AdvisedSetting(1, None, expect, objective)
        return Finding(name, Severity.MEDIUM, None, "m", "a", setting=setting)

    analysis = _Findings(
        (
            finding("more", Expect.FASTER, "throughput"),
            finding("tail", Expect.FASTER, "p99"),
            finding("wasted", Expect.NOT_SLOWER, "throughput"),
            finding("per-step", Expect.FASTER, None),
        )
    )
    marked = {f.id: f.verification for f in mark(analysis, runs, now, Path("v")).findings}
    more, tail, wasted, step = (marked[k] for k in ("more", "tail", "wasted", "per-step"))
    assert more.status is Status.CONFIRMED and more.speedup == pytest.approx(1.2, rel=1e-3)
    assert more.reason.startswith(
        "intra 1 · inter 2 served more requests per second than intra 2 · inter 2: requests/s 1.20x"
    )
    assert tail.status is Status.NOT_CONFIRMED
    assert (
        "had a higher p99 latency than" in tail.reason and "p99 latency 0.91x lower" in tail.reason
    )
    assert wasted.status is Status.CONFIRMED
    assert step.status is Status.CONFIRMED and "ran faster than" in step.reason


def test_judge_names_the_measure():
    now, then = [1.0, 1.02, 0.98], [1.0, 1.01, 0.99]
    status, reason = judge(Expect.NOT_SLOWER, now, then, "b", "a", "p50")
    assert status is Status.CONFIRMED
    assert (
        reason == "b and a are within noise: p50 latency 1.00x lower (0.97-1.03x over 3 runs each)"
    )
    status, reason = judge(Expect.NOT_SLOWER, now, [1.12, 1.1, 1.11], "b", "a", "throughput")
    assert status is Status.NOT_CONFIRMED
    assert reason.startswith("b served fewer requests per second than a: requests/s 0.90x")
    # None: the time per step, in the words it always had
    status, reason = judge(Expect.FASTER, now, [0.5, 0.51, 0.49], "b", "a")
    assert reason.startswith("b ran faster than a: 2.00x (")
