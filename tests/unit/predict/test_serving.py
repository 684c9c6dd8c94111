"""A server predicted: its requests replayed together as a closed loop, requests/s and latency
per setting, on a hand-built server whose answer is worked out by hand (``served_run``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from builders import MS, served_run
from tftrace.analysis.predict import predict
from tftrace.analysis.predict.predicting import INTER_OP
from tftrace.analysis.predict.replays import closed_loop_span
from tftrace.analysis.predict.serving import LEAST_REQUESTS, replayed_stretch


@pytest.fixture(scope="module")
def prediction():
    return predict(served_run(), inter=(1, 2))


def test_two_request_threads_on_one_inter_op_thread_take_turns(prediction):
    """Recorded at inter-op 2, 125 requests/s by construction (each thread one request every
    16 ms); at inter-op 1 the two threads' 10 ms closures take turns on one thread: at most
    100 requests/s, and each call takes 15 ms of its thread's 20 ms cycle (11 recorded)."""
    assert prediction.unit == "request" and prediction.server is not None
    assert prediction.residual == pytest.approx(0, abs=0.01)
    recorded, turns = prediction.setting(1, 2), prediction.setting(1, 1)
    assert recorded.served == prediction.server
    assert prediction.server.mean_ms == pytest.approx(11) == prediction.server.p99_ms
    assert turns.speedup == pytest.approx(0.8, rel=0.03)
    assert turns.served.requests_per_s == pytest.approx(
        prediction.server.requests_per_s * 0.8, rel=0.03
    )
    assert turns.served.p50_ms == pytest.approx(15, rel=0.05)
    assert turns.served.p50_ms <= turns.served.p99_ms
    assert turns.reason == INTER_OP
    assert prediction.best() == recorded and prediction.recommended() is None


def test_the_server_figures_are_in_the_json_and_the_table(prediction):
    data = json.loads(json.dumps(prediction.to_json()))
    assert data["server"]["requests_per_s"] == pytest.approx(prediction.server.requests_per_s)
    assert data["settings"][0]["served"]["p50_ms"] == pytest.approx(15, rel=0.05)
    text = str(prediction)
    assert "req/s" in text and "p99 ms" in text and "requests/s" in text
    assert "closed loop" in text


def test_a_server_with_too_few_requests_is_one_line():
    from tftrace.errors import TftraceError

    with pytest.raises(TftraceError, match="too few to replay"):
        predict(served_run(calls=5))  # 9 after the warm-up


def test_the_closed_loop_span_sums_each_threads_first_to_last_start():
    assert closed_loop_span([1, 1, 1, 2, 2], [0, 10, 20, 5, 25]) == 40
    assert closed_loop_span([1, 2], [0, 5]) is None  # no thread made two


def test_the_stretch_is_consecutive_requests_from_the_middle_bounded_by_closures():
    n = 300
    requests = pd.DataFrame(
        {
            "request": np.arange(1, n + 1),
            "thread": np.arange(n) % 3,
            "start_ns": np.arange(n) * MS,
            "end_ns": np.arange(n) * MS + MS // 2,
        }
    )
    few = np.arange(0, n * MS, 10 * MS)  # one closure every 10 requests
    stretch = replayed_stretch(requests, few, most=120)
    assert len(stretch) == 120 and stretch["request"].tolist() == list(range(91, 211))
    many = np.arange(0, n * MS, MS // 100)  # a hundred per request
    bounded = replayed_stretch(requests, many, most=120, most_closures=3000)
    assert LEAST_REQUESTS <= len(bounded) <= 31
    assert np.all(np.diff(bounded["request"]) == 1)
    assert len(replayed_stretch(requests, many, most=120, most_closures=10)) == LEAST_REQUESTS
