"""``tftrace predict`` on the checked-in traces: the calibration holds on real steps, the
two-chain workload (recorded at intra-op 2, inter-op 2) on one thread of each pool is
predicted as it was measured, a trace without thread-pool events is refused, and bad flags
are one line."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLE_RUN, SAMPLE_TRACES
from tftrace.analysis.metrics.measured import measure
from tftrace.analysis.model.run import load
from tftrace.analysis.predict import predict
from tftrace.cli import main

WITH_POOL_EVENTS = [SAMPLE_TRACES / "tf-2.18", SAMPLE_TRACES / "tf-2.21"]


@pytest.mark.parametrize("path", WITH_POOL_EVENTS, ids=lambda p: p.name)
def test_the_recorded_setting_predicts_itself(path):
    run = load(path)
    p = predict(run, intra=(1, 2), inter=(1, 2))
    steps = measure(run).steps.table  # the analysis' own window: steps 2-4
    assert p.window_steps == len(steps) == 3
    assert p.recorded_ms == pytest.approx(steps["duration_ns"].mean() / 1e6)
    recorded = p.setting(2, 2)
    assert recorded.basis == "recorded" and recorded.step_ms == pytest.approx(p.recorded_ms)
    assert abs(p.residual) < 0.10  # the replay places all but a few % of the recorded steps
    # two independent chains of 300x300 products: one inter-op thread runs them one after the
    # other, each product whole. Measured on 2 cores (the workload recorded three times at
    # each setting, quiet cores): 0.86x, 0.88x and 1.08x at 1, 1 against 2, 2 (products this
    # small gain little from two workers); what binds at 1, 1 is the one inter-op thread.
    serial = p.setting(1, 1)
    assert 0.8 < serial.speedup < 1.15 and serial.reason == "inter-op threads"


def test_the_command_prints_the_library_call(capsys: pytest.CaptureFixture[str]):
    assert main(["predict", str(SAMPLE_RUN), "--intra", "1,2", "--inter", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = predict(load(SAMPLE_RUN), intra=(1, 2), inter=(2,)).to_json()
    assert printed == json.loads(json.dumps(expected))
    assert main(["predict", str(SAMPLE_RUN), "--inter", "2"]) == 0
    out = capsys.readouterr().out
    assert "predicted step time per setting" in out and "recorded" in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["{old}"], "holds no thread-pool events"),
        (["{run}", "--intra", "1,x"], "--intra: 'x' is not a whole number"),
        (["{run}", "--inter", "0"], "--inter sizes must be whole numbers >= 1, not 0"),
        (["{run}", "--cpus", "0"], "--cpus must be at least 1"),
        (["{run}", "--window", "9:12"], "window 9:12: the run has steps 1-4 of 4"),
    ],
)
def test_bad_input_is_one_line(args, says, capsys: pytest.CaptureFixture[str]):
    paths = {"run": SAMPLE_RUN, "old": SAMPLE_TRACES / "tf-2.16"}
    assert main(["predict", *(a.format(**paths) for a in args)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("tftrace: error: ") and says in err[0], err


def test_analyze_predict_puts_each_advised_setting_beside_its_finding(
    capsys: pytest.CaptureFixture[str],
):
    """``analyze --predict``: each finding that advises pool sizes carries the prediction of
    those sizes, the one ``tftrace predict`` gives; the headline names the best of the grid."""
    assert main(["analyze", str(SAMPLE_RUN), "--predict", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    grid = {(s["intra"], s["inter"]): s for s in document["prediction"]["settings"]}
    recorded = document["prediction"]["recorded"]
    advised = [f for f in document["findings"] if f["setting"]]
    for f in advised:
        wanted = f["setting"]
        if wanted["env"] or wanted["cpus"] is not None:
            assert f["predicted"]["speedup"] is None, f
            continue
        key = (wanted["intra"] or recorded["intra"], wanted["inter"] or recorded["inter"])
        assert f["predicted"]["speedup"] == pytest.approx(grid[key]["speedup"], abs=1e-4)
        assert f["predicted"]["basis"] == grid[key]["basis"]
    assert {(1, 1), (1, 2), (2, 1), (2, 2)} <= set(grid)  # the sweep's sizes on 2 CPUs
    assert document["prediction_note"] is None
    assert main(["analyze", str(SAMPLE_RUN), "--predict"]) == 0
    text = capsys.readouterr().out
    assert "predicted" in text.split("findings")[0]  # the headline's line, above the findings
    if advised:
        assert "predicted from the trace: " in text


def test_analyze_predict_says_why_a_run_has_no_prediction(capsys: pytest.CaptureFixture[str]):
    old = SAMPLE_TRACES / "tf-2.16"
    assert main(["analyze", str(old), "--predict", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["prediction"] is None
    assert "no thread-pool events" in document["prediction_note"]
    for f in document["findings"]:
        if f["setting"]:
            assert f["predicted"] == {"speedup": None, "basis": document["prediction_note"]}
