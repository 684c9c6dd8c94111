"""A ``Prediction`` as data: its JSON holds every figure the table shows."""

from __future__ import annotations

import json

import pytest

from builders import stepped_run, two_closures_step
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict import predict


@pytest.fixture(scope="module")
def prediction():
    run = stepped_run([Pool.PYTHON_MAIN, Pool.INTER_OP], two_closures_step)
    return predict(run, inter=(1, 2))


def test_json_holds_every_figure(prediction):
    data = json.loads(json.dumps(prediction.to_json()))
    assert data["recorded"] == {"intra": 1, "inter": 1}
    assert data["cores"] == 2 and data["cores_basis"] == "2 usable CPUs"
    assert data["recorded_ms"] == pytest.approx(21) and data["replayed_ms"] == pytest.approx(20.9)
    rows = data["settings"]
    assert [(r["intra"], r["inter"], r["basis"]) for r in rows] == [
        (1, 1, "recorded"),
        (1, 2, "calibrated"),
    ]
    assert rows[1]["step_ms"] == pytest.approx(21 * 11 / 20.9)
    assert set(rows[1]["gains"]) == {"inter-op threads", "Eigen workers", "cores"}
    assert data["window_basis"].startswith("steady: steps 2-3 of 3")


def test_best_and_one_setting(prediction):
    assert prediction.best() == prediction.settings[1]
    assert prediction.setting(1, 1).basis == "recorded"
    with pytest.raises(KeyError):
        prediction.setting(2, 2)
    assert repr(prediction) == "<Prediction .: 2 settings, best intra 1 inter 2 (1.90x)>"
