"""A server's pace bin by bin, against a server whose pace alternates by construction.

``workloads/serve_two_paces.py`` makes its requests at two paces, alternating every 0.3 s,
and counts per pace its requests and its request threads' CPU and times put on a CPU (the
kernel's counts, read by the workload itself): tftrace's slowest and fastest thirds of 50 ms
bins must hold the slow and the fast pace's figures, and `analyze` and `predict` say so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tftrace
from conftest import WORKLOADS, quiet_env
from conftest import tftrace as run_tftrace

pytestmark = pytest.mark.slow

WORKLOAD = WORKLOADS / "serve_two_paces.py"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pace") / "run"
    own = out.with_suffix(".own.json")
    proc = run_tftrace(
        "record", "--no-pyspy", "-o", out, WORKLOAD, "--own", own,
        env=quiet_env(TF_NUM_INTRAOP_THREADS="2", TF_NUM_INTEROP_THREADS="2"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(own.read_text())


def test_the_slowest_and_fastest_thirds_hold_the_two_paces(recorded: tuple[Path, dict]) -> None:
    out, own = recorded
    analysis = tftrace.analyze(tftrace.load(out))
    pace = analysis.request_pace
    assert pace is not None and pace.bins >= 50  # 3 s of 50 ms bins
    for got, name in ((pace.slow, "slow"), (pace.fast, "fast")):
        want = own[name]
        n = want["requests"]
        assert got.rate == pytest.approx(n / want["seconds"], rel=0.2), name
        assert got.cpu_us == pytest.approx(want["cpu_s"] / n * 1e6, rel=0.2), name
        assert got.switches == pytest.approx(want["switches"] / n, rel=0.25), name
    # 1200 us of Python a request against 200, and 3 sleeps in it: slower, dearer and more
    # often put on a CPU
    assert pace.two_paces
    assert analysis.to_json()["request_pace"]["slow"]["cpu_us"] == pace.slow.cpu_us


def test_analyze_and_predict_say_so(recorded: tuple[Path, dict]) -> None:
    out, _ = recorded
    shown = run_tftrace("analyze", out)
    assert shown.returncode == 0, shown.stderr
    words = " ".join(shown.stdout.split())
    assert "pace by 50 ms: the slowest third" in words
    assert "but its requests ran at two paces (above), the fast one at" in words
    predicted = run_tftrace("predict", out, "--intra", "1,2", "--inter", "1,2")
    assert predicted.returncode == 0, predicted.stderr
    said = " ".join(predicted.stdout.split())
    assert "the requests ran at two paces" in said
    # the paces' span against the window's requests per second: slow below 1x, fast above
    span = re.search(r"the paces alone span ([0-9.]+)x to ([0-9.]+)x", said)
    assert span is not None and float(span[1]) < 1 < float(span[2])
    as_json = run_tftrace("predict", "--json", out, "--intra", "1,2", "--inter", "1,2")
    assert as_json.returncode == 0, as_json.stderr
    shown = json.loads(as_json.stdout)
    assert shown["request_pace"]["two_paces"] is True
    # every setting but the recorded one is said to be less sure, in the table and its JSON
    bases = {(s["intra"], s["inter"]): s["basis"] for s in shown["settings"]}
    assert bases.pop((2, 2)) == "recorded"
    assert set(bases.values()) == {"less sure: two paces"}, bases
    # the table gives the span (its cells may wrap: the low end's line is whole)
    assert re.search(r"│ +[0-9.]+x to +│", predicted.stdout), predicted.stdout
    # ... and given as a span, not one figure: the replayed speedup at the slow pace and at
    # the fast one, whose ratio is the paces' (the recorded setting stays one figure)
    slow, fast = float(span[1]), float(span[2])
    for s in shown["settings"]:
        if (s["intra"], s["inter"]) == (2, 2):
            assert s["speedup_bound"] is None
            continue
        low, high = s["speedup_bound"]
        assert low < s["speedup"] < high
        assert high / low == pytest.approx(fast / slow, rel=0.03)  # the text rounds
