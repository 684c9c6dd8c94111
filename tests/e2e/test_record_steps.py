"""``tftrace record --steps A:B``: the TF profiler over steps A to B-1 only (0-based, B left out),
counted as the analysis counts them; bad windows fail in one line before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

import tftrace
from conftest import WORKLOADS, host_plane, quiet_env
from conftest import tftrace as cli
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.render.run_summary import RunSummary, summary_lines
from tftrace.tracer.manifest_reader import Manifest
from tftrace.tracer.options import RecordOptions, Target
from tftrace.tracer.step_range import StepsError, parse_steps, window_problem

COUNTED = WORKLOADS / "counted_steps.py"  # 30 steps: tf.function calls, or Trace blocks


def one_line_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("text", "steps"),
    [("100:120", (100, 120)), ("100:", (100, None)), (":20", (0, 20)), (" 0 : 1 ", (0, 1))],
)
def test_steps_read_like_a_slice(text: str, steps: tuple[int, int | None]):
    assert parse_steps(text) == steps


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5:3", "the end must come after the start"),
        ("5:5", "the end must come after the start"),
        ("-1:5", "counted from 0, not negative"),
        ("x:y", "not A:B"),
        ("7", "not A:B"),
        ((1.5, 3), "nor a pair"),
        ((True, 3), "nor a pair"),
    ],
)
def test_bad_steps_say_why_in_one_line(value: object, message: str):
    with pytest.raises(StepsError, match=message) as caught:
        parse_steps(value)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_steps_window_is_the_profilers_and_the_only_one():
    def problem(**options: object) -> str:
        return window_problem(RecordOptions(Target("script", "t.py"), **options)) or ""  # type: ignore[arg-type]

    assert problem(steps=(1, 2)) == ""
    assert "choose one" in problem(steps=(1, 2), delay_s=1.0)
    assert "choose one" in problem(steps=(1, 2), duration_s=1.0)
    assert "turned off" in problem(steps=(1, 2), tf_profiler=False)


def test_manifest_says_how_the_run_was_recorded():
    old = Manifest.from_json({"kind": "tftrace-run"})  # written before the block existed
    assert (old.recording.how, old.recording.steps) == ("record", None)
    assert Manifest.empty().recording.how is None  # a bare trace: not recorded by tftrace
    block = {"how": "record", "steps": [100, None], "steps_counted": "tf.function calls"}
    read = Manifest.from_json({"kind": "tftrace-run", "recording": block})
    assert read.recording.steps == (100, None)
    for bad in ([1], ["a", 2], [1, "b"], "1:2"):
        bent = Manifest.from_json({"recording": {"steps": bad}})
        assert bent.recording.steps is None
    shown = summary_lines(RunSummary(Path("run"), read, {}, None))
    assert "recorded   tftrace record, steps 100:" in shown


def test_library_refuses_a_bad_window_before_anything_runs(tmp_path: Path):
    with pytest.raises(tftrace.TftraceError, match="steps 5:3: the end"):
        tftrace.record(COUNTED, output=tmp_path / "run", steps="5:3", echo=False)
    with pytest.raises(tftrace.TftraceError, match="choose one"):
        tftrace.record(COUNTED, output=tmp_path / "run", steps=(1, 2), delay_s=1, echo=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--steps", "5:3"), "--steps 5:3: the end must come after the start"),
        (("--steps", "-5:3"), "--steps -5:3: steps are counted from 0"),
        (("--steps", "x:y"), "--steps 'x:y': not A:B"),
        (("--steps", "1:2", "--delay", "1"), "choose one"),
        (("--duration", "2", "--steps", "1:2"), "choose one"),
        (("--steps", "1:2", "--no-tf-profiler"), "not with --no-tf-profiler"),
    ],
)
def test_bad_steps_on_the_command_line(tmp_path: Path, options: tuple[str, ...], message: str):
    proc = cli("record", "-o", tmp_path / "run", *options, COUNTED)
    assert proc.returncode == 2
    assert message in one_line_error(proc.stderr)
    assert not (tmp_path / "run").exists()


def _trace_steps(run: Path) -> list[int]:
    """The step_num of every Trace("train", step_num=...) event in the run's trace."""
    plane = host_plane(run)
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    train = {k for k, v in plane.event_metadata.items() if v.name == "train"}
    return sorted(
        stat.int64_value or stat.uint64_value
        for line in plane.lines
        for event in line.events
        if event.metadata_id in train
        for stat in event.stats
        if stat_names[stat.metadata_id] == "step_num"
    )


@pytest.mark.slow
def test_steps_of_tf_function_calls(record):
    done = record(COUNTED, "function", options=("--steps", "10:15", "--no-pyspy"))
    assert done.returncode == 0, done.stderr
    m = done.manifest()
    assert m["recording"] == {
        "how": "record",
        "steps": [10, 15],
        "steps_counted": "tf.function calls and Trace(step_num) blocks",
    }
    profiler = m["sources"]["tf_profiler"]
    assert profiler["state"] == "recorded"
    assert profiler["steps"] == {"asked": [10, 15], "ran": 30, "in_window": [10, 15]}
    assert "note" not in profiler
    # The OS sampler ran the whole time, not just the window.
    assert m["sources"]["os_sampler"]["state"] == "recorded"
    run = tftrace.load(done.run)
    steps = find_steps(run)
    assert (steps.found, steps.source) == (5, "tf.function train_step")
    # Every recorded step is analysed: the warm-up (step 0) came before the recording.
    analysis = tftrace.analyze(run)
    assert len(analysis.steps.table) == 5
    assert "the warm-up was before step 10" in analysis.window_basis
    assert analysis.warmup is None
    summary = cli("summary", done.run)
    assert "recorded   tftrace record, steps 10:15" in summary.stdout


@pytest.mark.slow
def test_steps_of_trace_blocks_keep_their_step_numbers(tmp_path: Path):
    # From Python this time; the tf.function inside each block is part of its step.
    result = tftrace.record(
        COUNTED,
        ["trace"],
        output=tmp_path / "run",
        steps=(12, 20),
        pyspy=False,
        echo=False,
        env=quiet_env(),
    )
    assert result.exit_code == 0
    assert result.manifest.recording.steps == (12, 20)
    assert _trace_steps(result.run.path) == list(range(12, 20))
    analysis = tftrace.analyze(tftrace.load(result.run.path))
    assert (analysis.steps.found, analysis.steps.source) == (8, "annotation train")
    assert len(analysis.steps.table) == 8


@pytest.mark.slow
def test_window_that_never_comes(record):
    done = record(COUNTED, "function", options=("--steps", "100:120", "--no-pyspy"))
    assert done.returncode == 0, done.stderr
    assert "STEPS_RAN=30" in done.stdout
    m = done.manifest()
    assert m["status"] == "complete" and m["workload"]["exit_code"] == 0
    profiler = m["sources"]["tf_profiler"]
    why = "the workload ran 30 steps; step 100 never came (steps 100:120)"
    assert (profiler["state"], profiler["reason"]) == ("failed", why)
    assert profiler["steps"] == {"asked": [100, 120], "ran": 30, "in_window": None}
    assert not done.run.joinpath("plugins").exists()
    summary = cli("summary", done.run)
    assert summary.returncode == 0 and why in " ".join(summary.stdout.split())
    # As for any run without a trace: the report of what is there, and why the trace is not.
    analyzed = cli("analyze", done.run)
    assert analyzed.returncode == 0, analyzed.stderr
    assert "Traceback" not in analyzed.stderr
    assert f"missing: trace: none ({why})" in analyzed.stdout


@pytest.mark.slow
def test_window_cut_by_the_workloads_end(record):
    done = record(COUNTED, "trace", options=("--steps", "25:40", "--no-pyspy"))
    assert done.returncode == 0, done.stderr
    profiler = done.manifest()["sources"]["tf_profiler"]
    assert profiler["state"] == "recorded"
    assert profiler["steps"] == {"asked": [25, 40], "ran": 30, "in_window": [25, 30]}
    assert profiler["note"].startswith("window cut at step 30:")
    assert _trace_steps(done.run) == list(range(25, 30))
    assert "window cut at step 30" in done.stderr  # the footer says it too
