"""A ``Prediction`` as data: its JSON holds every figure the table shows."""

from __future__ import annotations

import dataclasses
import json

import pytest

from builders import stepped_run, two_closures_step
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.predict import predict
from tftrace.analysis.predict.result import CALIBRATED, EXTRAPOLATION, RECORDED


@pytest.fixture(scope="module")
def prediction():
    run = stepped_run([Pool.PYTHON_MAIN, Pool.INTER_OP], two_closures_step)
    return predict(run, inter=(1, 2))


def test_json_holds_every_figure(prediction):
    data = json.loads(json.dumps(prediction.to_json()))
    assert data["recorded"] == {"intra": 1, "inter": 1}
    assert data["cores"] == 2 and data["cores_basis"] == "2 usable CPUs"
    assert data["recorded_ms"] == pytest.approx(21) and data["replayed_ms"] == pytest.approx(20.9)
    assert data["charged"] == 0.0  # nothing ran split: the residual scales every setting
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


def with_speedups(prediction, *rows):
    """``prediction`` with settings (intra, inter, speedup, basis) instead of its own."""
    settings = tuple(
        dataclasses.replace(prediction.settings[1], intra=i, inter=k, speedup=x, basis=basis)
        for i, k, x, basis in rows
    )
    return dataclasses.replace(prediction, settings=settings)


def test_the_best_is_an_extrapolation_only_clearly_faster(prediction):
    beyond = f"{EXTRAPOLATION}: inter 4 > 2 CPUs"
    near = with_speedups(
        prediction, (1, 1, 1.0, RECORDED), (1, 2, 2.0, CALIBRATED), (1, 4, 2.06, beyond)
    )
    assert (near.best().intra, near.best().inter) == (1, 2)
    clear = with_speedups(
        prediction, (1, 1, 1.0, RECORDED), (1, 2, 2.0, CALIBRATED), (1, 4, 2.2, beyond)
    )
    assert (clear.best().intra, clear.best().inter) == (1, 4)


def test_among_settings_as_fast_the_recorded_then_the_fewest_threads_win(prediction):
    tied = with_speedups(
        prediction, (2, 2, 1.0, RECORDED), (1, 2, 1.005, CALIBRATED), (2, 1, 1.004, CALIBRATED)
    )
    assert tied.best().basis == RECORDED
    fewer = with_speedups(prediction, (2, 2, 1.0, RECORDED), (1, 2, 1.2, CALIBRATED),
                          (2, 1, 1.195, CALIBRATED), (1, 1, 1.19, CALIBRATED))  # fmt: skip
    assert (fewer.best().intra, fewer.best().inter) == (1, 1)


def test_a_setting_is_recommended_only_2_percent_faster_than_the_recorded(prediction):
    flat = with_speedups(prediction, (2, 2, 1.0, RECORDED), (1, 2, 1.015, CALIBRATED))
    assert flat.recommended() is None
    gains = with_speedups(prediction, (2, 2, 1.0, RECORDED), (1, 2, 1.03, CALIBRATED))
    assert gains.recommended() == gains.setting(1, 2)


def test_a_server_at_two_paces_is_told_to_change_only_beyond_its_fast_pace(prediction):
    """Served at 100 requests/s, its fast pace 120 (two paces): 1.15x predicted is inside what
    the pace alone gives, so the recorded setting is kept; 1.25x is beyond it. At one pace the
    2 % rule holds."""
    from tftrace.analysis.metrics.request_pace import Pace, RequestPace
    from tftrace.analysis.predict.result import TWO_PACES, Served

    paces = RequestPace(30, 50_000_000, Pace(80, 700, 8), Pace(120, 450, 4))
    assert paces.two_paces
    server = Served(100.0, 10.0, 9.0, 20.0)

    def served(speedup, pace):
        rows = ((2, 2, 1.0, RECORDED), (1, 2, speedup, TWO_PACES))
        return dataclasses.replace(with_speedups(prediction, *rows), server=server, pace=pace)

    assert served(1.15, paces).recommend_gain == pytest.approx(1.2)
    assert served(1.15, paces).recommended() is None
    beyond = served(1.25, paces)
    assert beyond.recommended() == beyond.setting(1, 2)
    one_pace = dataclasses.replace(paces, fast=Pace(101, 550, 5))
    assert not one_pace.two_paces
    assert served(1.15, one_pace).recommend_gain == pytest.approx(1.02)
    assert served(1.15, one_pace).recommended() is not None
    # the headline says why none is recommended
    from types import SimpleNamespace

    from tftrace.analysis.render.core_use_text import predicted_lines

    said = " ".join(predicted_lines(SimpleNamespace(prediction=served(1.15, paces), core_use=None)))
    assert "none of 2 settings is 20% faster than the run's own" in said
    assert "its requests' fast pace alone ran 1.20x the window's" in said


def test_ranked_orders_settings_predicted_alike_by_what_the_run_shows_then_threads(prediction):
    beyond = f"{EXTRAPOLATION}: inter 4 > 2 CPUs"
    # inter 4 by the replay's rounding a hair ahead of inter 2 (it flipped between recordings
    # of the same workload): inter 2, shown by the run, comes first, then 4, then the rest
    alike = with_speedups(prediction, (1, 1, 1.0, RECORDED), (1, 2, 1.9494, CALIBRATED),
                          (1, 4, 1.9495, beyond), (2, 2, 1.5, CALIBRATED))  # fmt: skip
    assert [(s.intra, s.inter) for s in alike.ranked()] == [(1, 2), (1, 4), (2, 2), (1, 1)]
    assert alike.ranked()[0] == alike.best()
    # by another figure (a latency: higher is its inverse), the same rules
    slow_first = alike.ranked(lambda s: 1 / s.speedup)
    assert [(s.intra, s.inter) for s in slow_first] == [(1, 1), (2, 2), (1, 2), (1, 4)]


def test_a_setting_at_two_paces_is_a_span_in_every_figure(prediction):
    """Replayed at 1.1x with paces 0.8x and 1.2x of the window's requests/s: the span is
    0.88x to 1.32x, 88 to 132 requests/s from 110, and each latency against it; the finding's label,
    the headline's best and the JSON carry the span, not the replayed figure alone."""
    from types import SimpleNamespace

    from tftrace.analysis.findings.finding import PredictedGain
    from tftrace.analysis.metrics.request_pace import Pace, RequestPace
    from tftrace.analysis.predict.result import TWO_PACES, Served, pace_bound
    from tftrace.analysis.render.core_use_text import predicted_lines

    bound = pace_bound(1.1, 0.8, 1.2)
    assert bound == pytest.approx((0.88, 1.32))
    served = Served(110.0, 10.0, 9.0, 20.0)
    setting = dataclasses.replace(
        prediction.settings[1], speedup=1.1, basis=TWO_PACES, served=served, bound=bound
    )
    assert setting.speedup_label() == "0.88x to 1.32x"
    span = setting.served_span()
    assert span is not None
    slow, fast = span
    assert (slow.requests_per_s, fast.requests_per_s) == pytest.approx((88.0, 132.0))
    assert (slow.p99_ms, fast.p99_ms) == pytest.approx((25.0, 20 / 1.2))
    assert setting.to_json()["speedup_bound"] == pytest.approx([0.88, 1.32])
    gain = PredictedGain(setting.speedup, setting.basis, setting.bound)
    assert gain.label() == f"0.88x to 1.32x ({TWO_PACES})"
    assert gain.to_json()["speedup_bound"] == pytest.approx([0.88, 1.32])
    # recommended (1.1x beyond a fast pace of 1.05x), the headline gives its span
    recorded = dataclasses.replace(prediction.settings[0], speedup=1.0, basis=RECORDED)
    pace = RequestPace(30, 50_000_000, Pace(70, 700, 8), Pace(105, 450, 4))
    guess = dataclasses.replace(
        prediction, settings=(recorded, setting), server=Served(100.0, 11.0, 10.0, 22.0), pace=pace
    )
    assert guess.recommended() == setting
    said = " ".join(predicted_lines(SimpleNamespace(prediction=guess, core_use=None)))
    assert ": 0.88x to 1.32x the requests/s, p99 16.7 to 25.0 ms (recorded 22.0 ms)" in said
    # one figure where the trace supports it
    assert prediction.settings[1].served_span() is None
    assert " to " not in prediction.settings[1].speedup_label()
