"""``tftrace predict`` on the checked-in traces: the calibration holds on real steps, the
two-chain workload (recorded at intra-op 2, inter-op 2) is predicted slower on one thread of
each pool, a trace without thread-pool events is refused, and bad flags are one line."""

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
    # two independent chains of products: one inter-op thread runs them one after the other,
    # with no Eigen worker beside it
    serial = p.setting(1, 1)
    assert serial.speedup < 0.8 and serial.reason == "inter-op threads"


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
