"""Damaged copies of a real trace: load() reads them or says, in one TraceError, what is wrong.

The decoder itself is fuzzed in a subprocess (test_xplane_decode.py) so that a crash fails a
test; here the whole loader is fed damaged files and must never raise anything else.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from conftest import SAMPLE_RUN
from tftrace.analysis.model.run import load
from tftrace.errors import TraceError


def _damaged_copies(data: bytes, seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    out = [data[: rng.randrange(1, len(data))] for _ in range(count // 2)]
    for _ in range(count - len(out)):
        damaged = bytearray(data)
        for _ in range(rng.randrange(1, 4)):
            damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        out.append(bytes(damaged))
    return out


def test_damaged_traces_load_or_fail_cleanly(sample_run_copy: Path):
    run = sample_run_copy
    (xplane,) = run.glob("plugins/profile/*/*.xplane.pb")
    original = xplane.read_bytes()
    outcomes = {"loaded": 0, "refused": 0}
    for data in _damaged_copies(original, seed=20261122, count=240):
        xplane.write_bytes(data)
        try:
            loaded = load(run)
        except TraceError as e:
            message = str(e)
            assert str(xplane) in message and "\n" not in message
            outcomes["refused"] += 1
            continue
        # What loads is self-consistent: every event belongs to a known thread.
        assert loaded.events["thread"].isin(loaded.threads["thread"]).all()
        outcomes["loaded"] += 1
    assert outcomes["refused"] > 0 and outcomes["loaded"] > 0, outcomes


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9, 0.999])
def test_truncated_trace_names_the_file(tmp_path: Path, cut: float):
    (xplane,) = SAMPLE_RUN.glob("plugins/profile/*/*.xplane.pb")
    data = xplane.read_bytes()
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(TraceError, match=r"cut\.xplane\.pb: not a valid xplane trace"):
        load(path)
