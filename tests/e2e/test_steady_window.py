"""The steady window on real Keras fits: the steps are the calls of Keras' train function, the
window leaves the first (tracing) call out, and the warm-up is that call.

Known answers by construction: 6 batches in one epoch, so 6 / steps_per_execution steps, each of
steps_per_execution batches. keras.applications' model is built with weights=None (no download).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import WORKLOADS, quiet_env, tftrace
from tftrace.analysis.analyze import analyze
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.model.run import Run, load

pytestmark = pytest.mark.slow
BATCHES = 6
KERAS_STEP = "tf.function multi_step_on_iterator"  # Keras 3's train function


def recorded(tmp: Path, workload: str, per_call: int) -> Path:
    run = tmp / "run"
    proc = tftrace(
        "record",
        "-o",
        run,
        "--no-pyspy",
        WORKLOADS / workload,
        "--batches",
        str(BATCHES),
        "--steps-per-execution",
        str(per_call),
        env=quiet_env(),
    )
    assert proc.returncode == 0, proc.stderr
    return run


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded(tmp_path_factory.mktemp("mobilenet"), "keras_fit_mobilenet.py", 1)


@pytest.fixture(scope="module")
def custom(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recorded(tmp_path_factory.mktemp("custom"), "keras_fit_custom.py", 2)


def check_steady(run: Run, per_call: int) -> None:
    steps = find_steps(run)
    assert steps.source == KERAS_STEP
    assert len(steps.table) == BATCHES // per_call  # steps found = batches run / per call
    assert steps.table["batches"].tolist() == [per_call] * (BATCHES // per_call)
    first = steps.table.iloc[0]
    analysis = analyze(run)
    # the steady window starts where the first (tracing) step ends and ends with the last step
    assert analysis.window == (int(first["end_ns"]), int(steps.table["end_ns"].iloc[-1]))
    assert analysis.steps.table["step"].tolist() == list(range(2, BATCHES // per_call + 1))
    last = BATCHES // per_call
    assert analysis.window_basis == (
        f"steady: steps 2-{last} of {last} ({KERAS_STEP}), after 1 warm-up step"
    )
    warmup = analysis.warmup
    assert warmup is not None and warmup.span == (int(first["start_ns"]), int(first["end_ns"]))
    shares = warmup.breakdown.set_index("category")["share"]
    assert shares.sum() == pytest.approx(1)
    # the first call traces (graph building) and instantiates the function before it runs
    assert shares["tracing (graph building)"] > 0
    assert shares["instantiation & graph optimisation"] > 0 and shares["first run"] > 0


def test_keras_application_fit(mobilenet: Path):
    check_steady(load(mobilenet), per_call=1)


def test_custom_model_fed_by_tf_data(custom: Path):
    run = load(custom)
    check_steady(run, per_call=2)
    # Adam's slots are created in the first call, lifted out of its graph
    warmup = analyze(run).warmup
    assert warmup is not None
    assert warmup.breakdown.set_index("category").loc["variable initialisation", "ns"] > 0


def test_window_option_on_the_command_line(custom: Path):
    proc = tftrace("analyze", "--json", "--window", "2:3", custom)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["window"]["basis"] == f"steps 2-3 of 3 ({KERAS_STEP})"
    assert [s["step"] for s in document["steps"]["table"]] == [2, 3]
    assert document["steps"]["batches_per_step"] == 2
    assert document["warmup"]["steps"] == 1
    text = tftrace("analyze", "--window", "all", custom).stdout
    assert "all: the whole trace" in text.splitlines()[0] and "warm-up: step 1" in text
    bad = tftrace("analyze", "--window", "2:9", custom)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert f"the run has steps 1-3 of 3 ({KERAS_STEP})" in bad.stderr
