"""The recording-overhead benchmark's statistics on hand-built data: whole-run rounds and
paired chunks, a ratio's 95 % confidence interval, "precise" once it is narrower than the
target's margin, the workload's paired-chunk output, and the in-code configurations
(``tftrace.profile``, its helper toggled)."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import load_benchmark

b = load_benchmark("record_overhead")
COMP = b.Comparison("(b)", "sampler+pyspy", "plain", 1.03)


def _results(ratios: list[float]) -> dict:
    plain = [b.Measurement(10.0, 11.0) for _ in ratios]
    other = [b.Measurement(10.0 * r, 11.0) for r in ratios]
    return {"plain": plain, "sampler+pyspy": other}


def test_the_interval_is_made_of_the_rounds_own_ratios():
    ratios = [1.01, 1.03, 1.02, 0.99, 1.05, 1.00, 1.02]
    lo, hi = b.ratio_ci([10 * r for r in ratios], [10.0] * len(ratios))
    # Seven rounds: the 95 % interval of the median runs from the smallest to the largest.
    assert math.isclose(lo, 0.99) and math.isclose(hi, 1.05)


def test_precise_once_the_interval_is_narrower_than_the_margin():
    assert not b.precise(_results([1.01, 1.02, 1.00]), COMP)  # too few rounds for an interval
    assert not b.precise(_results([1.01, 1.03, 1.02, 0.99, 1.05, 1.00, 1.02]), COMP)  # 0.06 wide
    steady = [1.010, 1.012, 1.011, 1.013, 1.010, 1.014, 1.012, 1.011]
    assert b.precise(_results(steady), COMP)  # 0.004 wide against a 0.03 margin


# The paired-chunk mode: chunks of one run, on and off in ABBA order, compared pair by pair.

p = load_benchmark("paired_overhead")
w = load_benchmark("workloads/overhead_workload")  # its TensorFlow import waits for main()
AA, SAMPLER, PYSPY = p.COMPARISONS[0], p.COMPARISONS[1], p.COMPARISONS[2]
IN_CODE = {c.label: c for c in p.COMPARISONS}["(a')"]
IN_CODE_PYSPY = {c.label: c for c in p.COMPARISONS}["(b')"]
NAMES = [c.config.name for c in p.COMPARISONS]


def _chunks(on: list[float], off: list[float], toggled: tuple[str, ...] = ()) -> object:
    def series(seconds: list[float]) -> object:
        return p.ChunkSeries(seconds, [100] * len(seconds), [1.5 * s for s in seconds])

    return p.PairedChunks(toggled, series(on), series(off), sum(off))


def _paired_run(ratios: list[float], toggled: tuple[str, ...] = ()) -> object:
    run = p.Run(stdout="", process_s=30.0)
    return p.PairedRun(_chunks([0.05 * r for r in ratios], [0.05] * len(ratios), toggled), run)


def test_chunks_go_off_on_on_off_so_that_a_linear_drift_cancels():
    states = [w.chunk_is_on(i) for i in range(8)]
    assert states == [False, True, True, False, False, True, True, False]
    # Every pair (chunks 2i and 2i+1) holds one chunk of each state.
    assert all(states[2 * i] != states[2 * i + 1] for i in range(4))
    # Under a drift of +1 % per chunk, the on and the off chunks of each block of four add
    # up to the same.
    drift = [1 + 0.01 * i for i in range(8)]
    on_time = sum(t for t, on in zip(drift, states, strict=True) if on)
    assert math.isclose(on_time, sum(drift) / 2)


def test_a_ratio_is_the_median_of_the_pairs_on_over_off():
    chunks = _chunks(on=[1.1, 2.0, 0.9], off=[1.0, 2.0, 1.0])
    assert chunks.ratios() == pytest.approx([1.1, 1.0, 0.9])
    ratio, (lo, hi) = p.summary([_paired_run([1.02, 1.01, 1.03, 1.00, 1.02, 1.04, 1.01])])
    assert ratio == pytest.approx(1.02)
    # Seven pairs: the 95 % interval of the median runs from the smallest to the largest.
    assert (lo, hi) == pytest.approx((1.00, 1.04))


def test_runs_of_one_configuration_pool_their_pairs():
    runs = [_paired_run([1.01] * 3), _paired_run([1.03] * 4)]
    assert p.pooled_ratios(runs) == pytest.approx([1.01] * 3 + [1.03] * 4)
    assert p.summary(runs)[0] == pytest.approx(1.03)


def test_rates_per_second_of_chunk_time_on_and_off():
    chunks = p.PairedChunks(
        ("recorder",),
        p.ChunkSeries([0.1, 0.3], [30, 50], [0.2, 0.4]),
        p.ChunkSeries([0.2, 0.2], [20, 20], [0.2, 0.2]),
        0.4,
    )
    runs = [p.PairedRun(chunks, p.Run("", 10.0, source_cpu_s={"os_sampler": 0.19}))]
    assert p.on_off(runs, lambda s: s.nivcsw) == pytest.approx((200.0, 100.0))
    assert p.on_off(runs, lambda s: s.cpu_seconds) == pytest.approx((1.5, 1.0))
    # The sampler ran for the process's 10 s less the 0.4 s it was stopped.
    assert p.source_cpu_shares(runs) == pytest.approx({"os_sampler": 0.19 / 9.6})


def _fake_runs(ratios_by_config: dict[str, list[float]]) -> tuple[object, list[str]]:
    """A runner that hands out the same pairs for each run of a configuration, and the
    configurations it was asked to run, in order."""
    calls: list[str] = []

    def run(comp: object, index: int) -> object:
        calls.append(comp.config.name)
        ratios = ratios_by_config[comp.config.name]
        return _paired_run(ratios, comp.expected_toggled)

    return run, calls


def test_until_precise_adds_runs_only_to_configurations_whose_interval_is_too_wide():
    steady = [1.010 + 0.001 * (i % 5) for i in range(40)]  # an interval 0.004 wide
    noisy = [1.0 + 0.05 * (-1) ** i * (i % 7) for i in range(40)]  # far wider than 0.03
    ratios = dict.fromkeys(NAMES, steady)
    ratios["sampler+pyspy"] = ratios["in-code sampler"] = noisy
    run, calls = _fake_runs(ratios)
    results = p.measure_paired(run, repeats=1, until_precise=4)
    assert [len(results[c.label]) for c in p.COMPARISONS] == [1, 1, 4, 1, 4, 1]
    assert calls[:6] == NAMES
    assert calls[6:] == ["sampler+pyspy", "in-code sampler"] * 3


def test_without_until_precise_each_configuration_runs_repeats_times():
    run, calls = _fake_runs(dict.fromkeys(NAMES, [1.0] * 3))
    results = p.measure_paired(run, repeats=2, until_precise=None)
    assert all(len(runs) == 2 for runs in results.values())
    assert len(calls) == 12


def test_precise_once_the_pooled_interval_is_narrower_than_the_margin():
    assert not p.precise([_paired_run([1.01, 1.02, 1.00])], SAMPLER)  # too few pairs
    wide = [1.00, 1.05, 0.98, 1.04, 1.01, 0.99, 1.03, 1.02]
    assert not p.precise([_paired_run(wide)], SAMPLER)  # 0.07 wide against a 0.02 margin
    assert p.precise([_paired_run([1.01] * 10)], SAMPLER)
    assert AA.margin == pytest.approx(0.02) and PYSPY.margin == pytest.approx(0.03)


def test_verdicts_and_the_a_a_control():
    assert p.verdict(1.01, (1.005, 1.015), SAMPLER, []) == "PASS"
    assert p.verdict(1.01, (0.99, 1.03), SAMPLER, []).endswith("(interval wider than the margin)")
    assert p.verdict(1.03, (1.025, 1.035), SAMPLER, []).startswith("FAIL")
    assert p.verdict(1.01, (1.005, 1.015), SAMPLER, ["pyspy failed"]) == "INVALID"
    assert p.verdict(1.001, (0.995, 1.006), AA, []).startswith("ok")
    assert p.verdict(1.012, (1.006, 1.018), AA, []).startswith("BIASED")


def test_a_run_that_stopped_other_processes_than_expected_is_not_a_valid_comparison():
    assert PYSPY.expected_toggled == ("recorder", "py-spy")
    assert SAMPLER.expected_toggled == ("recorder",) and AA.expected_toggled == ()
    assert p.problems_of([_paired_run([1.0] * 6, ("recorder", "py-spy"))], PYSPY) == []
    problems = p.problems_of([_paired_run([1.0] * 6, ("recorder",))], PYSPY)
    assert problems == ["the workload stopped recorder, not recorder, py-spy"]


def test_the_workloads_paired_chunks_line_parses():
    class Result:
        def numpy(self) -> None:
            pass

    args = argparse.Namespace(paired=3, chunk_steps=2, settle_steps=1, toggle="none")
    printed = w.run_paired(lambda i: Result(), args)
    stdout = f"WORKLOAD_SECONDS=0.1\nPAIRED_CHUNKS={json.dumps(printed)}\n"
    chunks = p.parse_paired_chunks(stdout)
    assert chunks.toggled == () and chunks.stopped_seconds == 0.0
    assert len(chunks.on.seconds) == len(chunks.off.seconds) == 3
    assert len(chunks.on.nivcsw) == len(chunks.on.cpu_seconds) == 3


def test_the_last_paired_chunks_line_counts_and_a_malformed_one_is_an_error():
    line = {
        "toggled": ["recorder", "py-spy"],
        "on": {"seconds": [0.2], "nivcsw": [5], "cpu_seconds": [0.3]},
        "off": {"seconds": [0.1], "nivcsw": [4], "cpu_seconds": [0.2]},
        "stopped_seconds": 0.12,
    }
    stdout = f"PAIRED_CHUNKS={{}}\nother output\nPAIRED_CHUNKS={json.dumps(line)}\n"
    chunks = p.parse_paired_chunks(stdout)
    assert chunks.toggled == ("recorder", "py-spy")
    assert chunks.ratios() == pytest.approx([2.0])
    assert p.parse_paired_chunks("WORKLOAD_SECONDS=1.0\n") is None
    line["off"]["seconds"] = [0.1, 0.1]
    with pytest.raises(ValueError, match="malformed"):
        p.parse_paired_chunks(f"PAIRED_CHUNKS={json.dumps(line)}")
    with pytest.raises(ValueError, match="malformed"):
        p.parse_paired_chunks('PAIRED_CHUNKS={"toggled": []}')


def test_the_workload_finds_children_by_parent_and_name():
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert w.children_named(os.getpid(), "sleep") == [child.pid]
        assert w.children_named(os.getpid(), "py-spy") == []
    finally:
        child.kill()
        child.wait()


def test_toggling_the_recorder_needs_tftrace_record_as_the_parent():
    with pytest.raises(SystemExit, match="not `tftrace record`"):
        w.toggle_targets("recorder")
    assert w.toggle_targets("none") == []


# The in-code path: tftrace.profile's helper (and its py-spy) toggled instead of the recorder.


def test_the_in_code_configurations_toggle_the_helper_against_the_recorders_targets():
    assert [c.label for c in p.COMPARISONS] == ["A/A", "(a)", "(b)", "(c)", "(a')", "(b')"]
    assert (IN_CODE.config.name, IN_CODE.target) == ("in-code sampler", SAMPLER.target)
    assert (IN_CODE_PYSPY.config.name, IN_CODE_PYSPY.target) == ("in-code sampler+pyspy", 1.03)
    assert IN_CODE.toggle == IN_CODE_PYSPY.toggle == "helper"
    assert (SAMPLER.toggle, AA.toggle) == ("recorder", "none")
    assert IN_CODE.expected_toggled == ("helper",)
    assert IN_CODE_PYSPY.expected_toggled == ("helper", "py-spy")
    assert IN_CODE.margin == pytest.approx(0.02) and IN_CODE_PYSPY.margin == pytest.approx(0.03)
    problems = p.problems_of([_paired_run([1.0] * 6, ("helper",))], IN_CODE_PYSPY)
    assert problems == ["the workload stopped helper, not helper, py-spy"]


def test_an_in_code_run_is_a_plain_python_run_that_records_into_its_run_directory(tmp_path):
    r = load_benchmark("overhead_runs")
    sampler, pyspy = r.CONFIG["in-code sampler"], r.CONFIG["in-code sampler+pyspy"]
    assert sampler.records and pyspy.records and not r.CONFIG["plain"].records
    assert sampler.sources == ("os_sampler",) and pyspy.sources == ("os_sampler", "pyspy")
    # Not among the whole-run configurations: the in-code path is measured in paired chunks.
    assert sampler not in r.CONFIGS and pyspy not in r.CONFIGS
    run_dir = tmp_path / "run-005"
    cmd = r.command(pyspy, ("--paired=3", "--toggle=helper"), run_dir)
    assert cmd == [
        sys.executable,
        str(r.WORKLOAD),
        "--paired=3",
        "--toggle=helper",
        "--in-code",
        str(run_dir),
        "--in-code-pyspy",
    ]
    assert r.command(sampler, (), run_dir)[-2:] == ["--in-code", str(run_dir)]
    assert "pyspy=False" in sampler.describe() and "pyspy=True" in pyspy.describe()


def test_the_recordings_span_comes_from_the_manifests_clock():
    r = load_benchmark("overhead_runs")
    data = {
        "clock": {
            "start": {"monotonic_ns": 5_000_000_000},
            "end": {"monotonic_ns": 57_500_000_000},
        },
        "sources": {"os_sampler": {"state": "recorded", "cpu_seconds": 0.8}},
    }
    assert r.recorded_seconds(data) == pytest.approx(52.5)
    assert r.recorded_seconds({"clock": {"start": {"monotonic_ns": 1}}}) is None
    assert r.recorded_seconds("manifest unreadable: gone") is None
    assert r.source_cpu_seconds(r.manifest_sources(data)) == {"os_sampler": 0.8}
    assert r.manifest_sources({}) == "manifest unreadable: no sources section"


def test_source_cpu_is_per_second_of_the_recording_when_the_manifest_says_it():
    # An in-code recording spans the profile block (40 s), not the whole process (60 s).
    run = p.Run("", 60.0, recorded_s=40.0, source_cpu_s={"os_sampler": 0.3, "pyspy": 1.5})
    chunks = _chunks([0.05] * 4, [0.05] * 4, ("helper", "py-spy"))
    shares = p.source_cpu_shares([p.PairedRun(chunks, run)])
    ran = 40.0 - chunks.stopped_seconds
    assert shares == pytest.approx({"os_sampler": 0.3 / ran, "pyspy": 1.5 / ran})


def _results_of_every_configuration() -> dict:
    return {
        c.label: [_paired_run([1.0 + 0.001 * (i % 3) for i in range(10)], c.expected_toggled)]
        for c in p.COMPARISONS
    }


def test_the_report_and_the_json_show_the_in_code_configurations():
    results = _results_of_every_configuration()
    report = p.render(results, quick=False)
    for comp in (IN_CODE, IN_CODE_PYSPY):
        rows = [line for line in report.splitlines() if comp.config.name in line]
        assert any(comp.label in row and "PASS" in row for row in rows)
        assert any(comp.config.describe() in row for row in rows)
    assert "warning" not in report
    data = [p.comparison_json(c, results[c.label]) for c in p.COMPARISONS]
    in_code = {d["label"]: d for d in data}["(b')"]
    assert in_code["config"] == "in-code sampler+pyspy" and in_code["target"] == 1.03
    assert in_code["passed"] is True and in_code["runs"][0]["toggled"] == ["helper", "py-spy"]


def test_toggling_the_helper_needs_an_in_code_recording():
    with pytest.raises(SystemExit, match="--toggle helper needs --in-code"):
        w.parse_args(["--paired=2", "--toggle=helper"])
    args = w.parse_args(["--paired=2", "--toggle=helper", "--in-code", "runs/x"])
    assert (args.in_code, args.in_code_pyspy) == ("runs/x", False)
    assert w.parse_args(["--in-code", "runs/x", "--in-code-pyspy"]).in_code_pyspy
    with pytest.raises(SystemExit, match=r"no tftrace\.tracer\.attach helper"):
        w.toggle_targets("helper")  # this process has no helper child
    assert isinstance(w.recording(w.parse_args([])), type(w.contextlib.nullcontext()))


def _fake_helper(tmp_path: Path, pyspy: bool) -> subprocess.Popen:
    """A child whose command line names tftrace.tracer.attach and a config, as the helper's."""
    config = tmp_path / "attach.json"
    config.write_text(json.dumps({"pyspy": pyspy}))
    code = "import time; time.sleep(30)"
    return subprocess.Popen([sys.executable, "-c", code, "tftrace.tracer.attach", str(config)])


def _state(pid: int) -> str:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return raw[raw.rindex(b")") + 2 :].split()[0].decode()


def _settled_state(pid: int, stopped: bool) -> str:
    """The process's state once it is (or is no longer) stopped, or after 5 s: a signal takes
    effect when the process is next scheduled."""
    deadline = time.monotonic() + 5
    while (_state(pid) == "T") != stopped and time.monotonic() < deadline:
        time.sleep(0.01)
    return _state(pid)


def test_the_workload_stops_its_helper_and_continues_it_even_when_a_chunk_fails(tmp_path):
    helper = _fake_helper(tmp_path, pyspy=False)
    try:
        assert w.attach_helper() == (helper.pid, False)
        assert w.toggle_targets("helper") == [("helper", helper.pid)]
        states = []

        def step(i: int) -> None:
            states.append(_settled_state(helper.pid, stopped=True))
            raise RuntimeError("the workload failed")

        args = argparse.Namespace(paired=2, chunk_steps=2, settle_steps=1, toggle="helper")
        with pytest.raises(RuntimeError):
            w.run_paired(step, args)
        assert states == ["T"]  # the first chunk is "off": the helper was stopped
        # Continued on the way out: the profile block can end.
        assert _settled_state(helper.pid, stopped=False) != "T"
    finally:
        helper.kill()
        helper.wait()
