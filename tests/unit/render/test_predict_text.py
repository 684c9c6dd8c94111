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


def test_the_headline_caps_the_best_prediction_at_the_bound(prediction):
    from types import SimpleNamespace

    from tftrace.analysis.render.core_use_text import predicted_lines

    def lines(bound):
        use = SimpleNamespace(max_speedup=bound)
        return " ".join(predicted_lines(SimpleNamespace(prediction=prediction, core_use=use)))

    assert "predicted best: intra 1, inter 2: 1.90x faster (calibrated; 2 settings" in lines(3.0)
    capped = lines(1.5)
    assert "1.50x (the bound; the replay says 1.90x) faster" in capped
    assert "the bound above is its ceiling (1.5x)" in capped


def test_the_best_of_settings_predicted_alike_is_inside_what_the_run_shows(prediction):
    fast = prediction.setting(1, 2)
    # an extrapolation wins only clearly faster (5 %): it is the model beyond the run
    wider = dataclasses.replace(fast, inter=4, speedup=fast.speedup * 1.04, basis="extrapolation")
    alike = dataclasses.replace(prediction, settings=(*prediction.settings, wider))
    assert alike.best() == fast
    faster = dataclasses.replace(wider, speedup=fast.speedup * 1.06)
    assert dataclasses.replace(prediction, settings=(*prediction.settings, faster)).best() == faster


def test_a_servers_table_shows_requests_per_second_and_latency():
    from builders import served_run

    p = predict(served_run(), inter=(1, 2))
    table = prediction_table(p)
    assert table.headers[:7] == (
        "intra",
        "inter",
        "req/s",
        "mean ms",
        "p50 ms",
        "p99 ms",
        "speedup",
    )
    recorded = p.server
    assert recorded is not None
    assert list(table.rows[1][:3]) == ["1", "2", f"{recorded.requests_per_s:.1f}"]
    assert table.rows[0][4] == "15.00" and table.rows[0][6] == "0.81x"
    text = " ".join(str(p).split())
    assert f"recorded: {recorded.requests_per_s:.1f} requests/s, latency mean 11.00 ms" in text


def test_a_charged_residual_is_said_in_the_calibration(prediction):
    words = " ".join(str(dataclasses.replace(prediction, charged=0.2)).split())
    assert (
        "(residual -0.5%, 2 steps replayed); the time short of the recording is charged to "
        "each setting by its crowded time"
    ) in words
    assert "every setting is scaled by it" not in words


def test_a_server_at_two_paces_shows_each_other_setting_as_a_span():
    """The replayed 1/1 with a span of 0.8x to 1.2x its figure: requests/s and speedup from the
    slow end to the fast one, latencies from the fast end (shortest) to the slow one; the
    recorded setting stays one figure."""
    from builders import served_run
    from tftrace.analysis.predict.result import TWO_PACES

    p = predict(served_run(), inter=(1, 2))
    one = p.setting(1, 1)
    assert one.served is not None
    spanned = dataclasses.replace(
        one, basis=TWO_PACES, bound=(one.speedup * 0.8, one.speedup * 1.2)
    )
    settings = tuple(spanned if s is one else s for s in p.settings)
    row, recorded_row = (
        prediction_table(dataclasses.replace(p, settings=settings)).rows[i] for i in (0, 1)
    )
    served = one.served
    assert row[2] == f"{served.requests_per_s * 0.8:.1f} to {served.requests_per_s * 1.2:.1f}"
    assert row[4] == f"{served.p50_ms / 1.2:.2f} to {served.p50_ms / 0.8:.2f}"
    assert row[6] == f"{one.speedup * 0.8:.2f}x to {one.speedup * 1.2:.2f}x"
    assert row[8] == TWO_PACES
    assert " to " not in recorded_row[2] and " to " not in recorded_row[6]
    # drawn on the terminal, a span's ends may go on two lines, but neither is cut
    drawn = str(dataclasses.replace(p, settings=settings))
    ends = [end for cell in row[2:7] for end in cell.split(" to ")]
    assert all(end in drawn for end in ends), (ends, drawn)
