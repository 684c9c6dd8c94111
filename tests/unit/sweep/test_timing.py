"""Sweep arithmetic on hand-built inputs: ladders, interleaving, timing spans, verdicts."""

from __future__ import annotations

import pandas as pd
import pytest

from tftrace.analysis.model.timed_steps import timed_steps_frame
from tftrace.analysis.sweep.stats import MIN_GAIN, beyond_cpus, summarize, verdict
from tftrace.analysis.sweep.timing import Measure, TimingError, measure
from tftrace.tracer.sweep import Setting, SweepError, grid, ladder, parse_values, schedule

MS = 1_000_000


@pytest.mark.parametrize(
    ("cpus", "expected"),
    [(1, [1, 2]), (2, [1, 2, 4]), (3, [1, 2, 3, 4]), (6, [1, 2, 4, 6, 8]), (8, [1, 2, 4, 8, 16])],
)
def test_ladder_goes_up_to_the_cpus_and_one_step_beyond(cpus, expected):
    assert ladder(cpus) == expected


def test_parse_values():
    assert parse_values("1,2,4", 2, "intra") == [1, 2, 4]
    assert parse_values("2,2,0", 2, "intra") == [2, 0]  # duplicates once; 0 = TF's default
    assert parse_values("auto", 2, "intra") == [1, 2, 4]
    assert parse_values(None, 2, "inter") == [None]
    for bad in ("1,x", "-1", ""):
        with pytest.raises(SweepError):
            parse_values(bad, 2, "intra")


def test_schedule_interleaves_rounds():
    a, b, c = Setting(1, None), Setting(2, None), Setting(4, None)
    order = [s for _, s in schedule([a, b, c], 3)]
    assert order == [a, b, c] * 3
    assert [r for r, _ in schedule([a, b], 2)] == [0, 0, 1, 1]


def test_settings_env_and_grid():
    assert Setting(2, None).env() == {"TF_NUM_INTRAOP_THREADS": "2"}
    assert Setting(0, 1).env() == {"TF_NUM_INTRAOP_THREADS": "0", "TF_NUM_INTEROP_THREADS": "1"}
    assert grid([1, 2], [1, 2]) == [Setting(1, 1), Setting(2, 1), Setting(1, 2), Setting(2, 2)]
    assert Setting(None, 0).threads(cpus=4) == 8


def _steps(rows, main=1):
    return timed_steps_frame({"rows": rows, "main_thread": main}, 0, [])


REPORT = {
    "code_start_anchor": {"monotonic_ns": 0},
    "end_anchor": {"monotonic_ns": 10_000 * MS},
    "code_start_cpu_ns": 0,
    "code_end_cpu_ns": 4_000 * MS,
}


def test_steady_state_starts_after_the_first_step():
    # A slow first call (tracing), then three 100 ms calls back to back.
    rows = [["tf.function", "step", None, 1, 0, 900 * MS, 0, 900 * MS]]
    for i in range(3):
        t = (900 + 100 * i) * MS
        rows.append(["tf.function", "step", None, 1, t, t + 100 * MS, t, t + 50 * MS])
    timing = measure(_steps(rows), REPORT, Measure.AUTO)
    assert timing.steps == 3 and timing.seconds == pytest.approx(0.3)
    assert timing.per_unit == pytest.approx(0.1)
    assert timing.cpu_seconds == pytest.approx(0.25)  # process CPU clock: 1150 - 900 ms
    assert "tf.function 'step'" in timing.basis


def test_warmup_steps_move_the_start_of_the_steady_state():
    # Steps end at 100, 300, 400, 500 and 600 ms: two warm-up steps leave 3 steps of 100 ms.
    ends = [100, 300, 400, 500, 600]
    rows = [["tf.function", "step", None, 1, 0, e * MS, 0, e * MS] for e in ends]
    timing = measure(_steps(rows), REPORT, Measure.AUTO, warmup=2)
    assert timing.steps == 3 and timing.per_unit == pytest.approx(0.1)
    assert timing.basis.endswith("after 2 warm-up steps")
    with pytest.raises(TimingError):
        measure(_steps(rows), REPORT, Measure.STEPS, warmup=5)


def test_annotated_steps_win_over_function_calls_and_other_threads_are_ignored():
    rows = [["annotation", "train", i, 1, i * MS * 10, (i + 1) * MS * 10, 0, 0] for i in range(5)]
    rows += [["tf.function", "f", None, 1, 0, 1 * MS, 0, 0]] * 7
    timing = measure(_steps(rows), REPORT, Measure.AUTO)
    assert timing.steps == 4 and timing.per_unit == pytest.approx(0.01)
    assert "Trace('train'" in timing.basis
    # Calls on a side thread are not the steps when the main thread has its own.
    calls = [["tf.function", "side", None, 2, i * MS, i * MS + 1, 0, 0] for i in range(9)]
    calls += [["tf.function", "main", None, 1, i * MS * 20, i * MS * 21, 0, 0] for i in range(3)]
    assert "'main'" in measure(_steps(calls), REPORT, Measure.AUTO).basis


def test_a_dataset_loops_passes_are_its_steps_only_without_functions_or_blocks():
    # next() calls on the main thread end at 500 ms (the pipeline starting), then every
    # 40 ms; the last element's pass and the iterator's teardown are not in any row
    ends = [500 + 40 * i for i in range(6)]
    passes = [["iteration", "tf.data iterator", None, 1, e * MS - MS, e * MS, 0, 0] for e in ends]
    timing = measure(_steps(passes), REPORT, Measure.AUTO)
    assert timing.steps == 5 and timing.per_unit == pytest.approx(0.04)
    assert "tf.data loop's passes" in timing.basis
    assert measure(_steps(passes), REPORT, Measure.STEPS).per_unit == pytest.approx(0.04)
    # a tf.function called in the loop is the step; so are passes on another thread not
    calls = [["tf.function", "train", None, 1, e * MS, e * MS + 30 * MS, 0, 0] for e in ends]
    assert "'train'" in measure(_steps(passes + calls), REPORT, Measure.AUTO).basis
    side = [[*row[:3], 2, *row[4:]] for row in passes]
    assert "no steps seen" in measure(_steps(side), REPORT, Measure.AUTO).basis


def test_marker_counts_the_time_inside_its_blocks():
    rows = [
        ["annotation", "measure", None, 1, 0, 200 * MS, 0, 100 * MS],
        ["annotation", "measure", None, 1, 500 * MS, 800 * MS, 100 * MS, 400 * MS],
        ["annotation", "other", None, 1, 0, 5000 * MS, 0, 0],
    ]
    timing = measure(_steps(rows), REPORT, Measure.AUTO, marker="measure")
    assert timing.seconds == pytest.approx(0.5) and timing.cpu_seconds == pytest.approx(0.4)
    assert timing.steps is None
    with pytest.raises(TimingError):
        measure(_steps(rows), REPORT, Measure.AUTO, marker="absent")


def test_without_steps_auto_times_the_script_and_steps_mode_refuses():
    one_call = _steps([["tf.function", "f", None, 1, 0, MS, 0, 0]])
    timing = measure(one_call, REPORT, Measure.AUTO)
    assert timing.seconds == pytest.approx(10.0) and timing.cpu_seconds == pytest.approx(4.0)
    assert "no steps seen" in timing.basis
    with pytest.raises(TimingError):
        measure(one_call, REPORT, Measure.STEPS)
    assert measure(one_call, REPORT, Measure.PROCESS, process=(12.0, 5.0)).seconds == 12.0


def _runs(times: dict[tuple[int | None, int | None], list[float]]) -> pd.DataFrame:
    rows = [
        {"intra": k[0], "inter": k[1], "round": r, "time_s": t, "cpu_util": 0.5}
        for k, ts in times.items()
        for r, t in enumerate(ts)
    ]
    df = pd.DataFrame(rows)
    return df.astype({"intra": "Int64", "inter": "Int64"})


def test_summary_figures():
    table = summarize(_runs({(1, 1): [2.0, 2.2, 1.8], (2, 1): [1.0, 1.1, 0.9]}), (1, 1))
    base, two = table.iloc[0], table.iloc[1]
    assert base["is_baseline"] and not two["is_baseline"]
    assert two["median_s"] == 1.0 and two["speedup"] == pytest.approx(2.0)
    assert two["speedup_lo"] == pytest.approx(1.8 / 1.1) and two["speedup_hi"] == 2.2 / 0.9
    assert two["spread"] == pytest.approx(0.2)


def test_disjoint_ranges_give_a_winner_and_fewer_threads_win_ties():
    runs = _runs({(1, 1): [2.0, 2.1, 2.2], (2, 1): [1.0, 1.1, 1.05], (4, 1): [1.02, 1.08, 1.0]})
    table = summarize(runs, (1, 1))
    v = verdict(table, cpus=2)
    assert v.kind == "faster"
    assert table.loc[v.recommended, "intra"] == 2  # 4 is within noise of 2 but costs more
    assert set(v.tied) == {1, 2} and v.slower == (0,)


def test_overlapping_ranges_mean_no_significant_difference():
    runs = _runs({(1, None): [1.0, 1.3, 1.1], (2, None): [0.95, 1.05, 1.2]})
    v = verdict(summarize(runs, (1, None)), cpus=2)
    assert v.kind == "no-difference" and v.recommended == 0


def test_consistent_but_tiny_gains_are_not_a_win():
    small = 1 + MIN_GAIN / 2
    runs = _runs({(1, 1): [small * 1.0, small * 1.001, small * 1.002], (2, 1): [1.0, 1.001, 1.002]})
    assert verdict(summarize(runs, (1, 1)), cpus=2).kind == "no-difference"


def test_too_few_repeats_do_not_decide():
    v = verdict(summarize(_runs({(1, 1): [2.0], (2, 1): [1.0]}), (1, 1)), cpus=2)
    assert v.kind == "too-few-runs" and v.fastest == 1


def test_settings_beyond_the_cpus():
    table = summarize(_runs({(1, 1): [1.0], (4, 1): [1.0], (2, 3): [1.0]}), (1, 1))
    assert beyond_cpus(table, cpus=2) == [1, 2]


def test_terminal_table_fits_100_columns_and_says_the_verdict(capsys):
    from types import SimpleNamespace

    from tftrace.analysis.findings import Finding, Severity
    from tftrace.analysis.sweep.outcome import RecordedView, SweepResult
    from tftrace.analysis.sweep.report import recommendation, render

    runs = _runs({(1, 1): [2.0, 2.1, 2.2], (2, 1): [1.0, 1.1, 1.05], (4, 1): [1.3, 1.4, 1.35]})
    table = summarize(runs, (1, 1))
    inline = Finding("ops-run-inline", Severity.HIGH, "intra-op", "ops ran <inline>.", "raise")
    result = SweepResult(
        target=["train.py", "--epochs", "1"],
        cpus=2,
        unit="s/step",
        bases=["steady state over tf.function 'step' calls"],
        runs=runs,
        table=table,
        verdict=verdict(table, cpus=2),
        warnings=["intra 4 · inter 1 asks for more threads than the 2 CPUs"],
        recorded={
            (1, 1): RecordedView(0.0, 0.0, inline, ("op, intra idle", 0.9), SimpleNamespace()),
            (2, 1): RecordedView(1.9, 0.0, None, ("intra-op parallel", 0.8), SimpleNamespace()),
        },
    )
    render(result)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "ops-run-inline" in out and "warning: intra 4" in out
    lines = recommendation(result)
    assert lines[0] == (
        "Use intra 2 · inter 1: 2.00x faster than intra 1 · inter 1 "
        "(1.82-2.20x across the repeats)."  # 2.0 / 1.1 .. 2.2 / 1.0
    )
    assert (
        "Slower beyond noise than intra 2 · inter 1: intra 1 · inter 1, intra 4 · inter 1." in lines
    )
    assert lines[-1] == "Why: in the recorded run of intra 1 · inter 1: ops ran <inline>."


def test_the_library_call_checks_its_arguments_before_anything_runs(tmp_path):
    import re

    from tftrace.analysis.sweep.session import sweep
    from tftrace.tracer.options import Target, as_target

    script = tmp_path / "workload.py"
    script.write_text("")
    out = tmp_path / "sweep"
    cases = [
        ({"warmup_steps": 0}, "--warmup-steps must be >= 1"),
        ({"repeat": 0}, "--repeat must be >= 1"),
        ({"measure": "often"}, "--measure 'often': give one of auto, steps, script, process"),
        ({"marker": "m", "measure": "script"}, "--marker cannot be used with --measure script"),
        ({"intra": [1, -1]}, "--intra: thread counts must be >= 0"),
        ({"intra": [1, 2], "baseline": (4, None)}, "--baseline 4,- is not one of the settings"),
        ({"intra": "1,2", "baseline": "1,x"}, "--baseline takes INTRA,INTER"),
    ]
    for kwargs, message in cases:
        with pytest.raises(SweepError, match=re.escape(message)):
            sweep(script, output=out, **kwargs)
    with pytest.raises(SweepError, match="script not found"):
        sweep(tmp_path / "missing.py", output=out)
    assert not out.exists()
    (out / "old").mkdir(parents=True)
    with pytest.raises(SweepError, match="output directory is not empty"):
        sweep(script, output=out)
    # A workload is a Target, or a script's path with its arguments.
    assert as_target(script, ["--size", "2"]) == Target("script", str(script), ("--size", "2"))
    assert as_target(Target("module", "pkg", ("a",)), ["b"]) == Target("module", "pkg", ("a", "b"))
    with pytest.raises(TypeError):
        as_target(script, "--size 2")


def _setter_runs(calls: list[dict], effective: tuple[int, int]) -> pd.DataFrame:
    """Two runs at intra 1 and 2 (inter left to TF) whose script made ``calls``."""
    rows = [
        {
            "intra": intra,
            "inter": None,
            "intra_effective": intra if effective[0] is None else effective[0],
            "inter_effective": effective[1],
            "intra_calls": [c for c in calls if c["setter"].startswith("set_intra")],
            "inter_calls": [c for c in calls if c["setter"].startswith("set_inter")],
        }
        for intra in (1, 2)
    ]
    return pd.DataFrame(rows).astype({"intra": "Int64", "inter": "Int64"})


def test_script_setter_calls_the_sweep_did_not_apply_are_warned_about_once():
    from tftrace.analysis.sweep.result import override_warnings

    def call(setter: str, value: int, **more) -> dict:
        return {"setter": f"set_{setter}_op_parallelism_threads", "value": value, **more}

    ignored = [call("intra", 1, applied=False, error=None), call("intra", 2, applied=False)]
    ignored.append(call("inter", 1, applied=False, error=None))
    assert override_warnings(_setter_runs(ignored, (None, 2)), cpus=2) == [
        "the script calls set_intra_op_parallelism_threads(1), "
        "set_intra_op_parallelism_threads(2), set_inter_op_parallelism_threads(1) itself: "
        "ignored, the sweep sets the pools; use --keep-script-settings to apply them"
    ]
    # Applied (--keep-script-settings, or a sweep written before the option): as before.
    late = [call("intra", 1, applied=True, error="RuntimeError: cannot be modified")]
    (warning,) = override_warnings(_setter_runs(late, (None, 2)), cpus=2)
    assert warning.startswith("the script calls set_intra_op_parallelism_threads(1) after")
    own = [call("intra", 3, error=None)]
    warnings = override_warnings(_setter_runs(own, (3, 2)), cpus=2)
    assert "set_intra_op_parallelism_threads(3) itself, which overrides" in warnings[0]
    assert "ignored, the sweep sets the pools" not in " ".join(warnings)
