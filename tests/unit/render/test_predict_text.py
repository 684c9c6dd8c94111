"""A ``Prediction`` shown: the table's rows, the calibration said, names from the run as text."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from builders import stepped_run, two_closures_step
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict import predict
from tftrace.analysis.render.predict_text import prediction_table


@pytest.fixture(scope="module")
def prediction():
    run = stepped_run([Pool.PYTHON_MAIN, Pool.INTER_OP], two_closures_step)
    return predict(run, inter=(1, 2))


def test_the_table_rows(prediction):
    table = prediction_table(prediction)
    assert table.headers == ("intra", "inter", "step ms", "speedup", "binds", "basis")
    assert [list(r) for r in table.rows] == [
        ["1", "1", "21.00", "1.00x", "inter-op threads", "recorded"],
        ["1", "2", "11.05", "1.90x", "dependency chain", "calibrated"],
    ]


def test_text_is_the_headline_the_table_and_the_calibration(prediction):
    text = str(prediction)
    words = " ".join(text.split())
    assert text.startswith("predicted from .: recorded at intra-op 1, inter-op 1, on 2 usable")
    assert "│     1 │     2 │   11.05 │   1.90x │ dependency chain │ calibrated │" in text
    assert (
        "calibration: the replay of the recorded setting gives 20.90 ms a step against the "
        "recorded 21.00 ms (residual -0.5%, 2 steps replayed); every setting is scaled by it"
    ) in words
    assert "note: intra-op 1 only: the run was recorded at intra-op 1" in words


def test_a_hostile_path_is_shown_as_text(prediction):
    hostile = dataclasses.replace(prediction, path=Path("[bold]x\x1b[2J<b>"))
    assert "[bold]x" in str(hostile) and "\x1b" not in str(hostile)
    page = hostile.to_html()
    assert "<b>" not in page and "&lt;b&gt;" in page
