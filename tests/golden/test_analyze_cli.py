"""``tftrace analyze`` on checked-in real runs: every table printed, JSON for machines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLE_RUNS, tftrace


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[p.name for p in SAMPLE_RUNS])
def test_analyze_prints_every_section(run: Path):
    proc = tftrace("analyze", run)
    assert proc.returncode == 0, proc.stderr
    for title in ("pools", "queue delay", "CPU truth", "where the wall time went", "top op types"):
        assert title in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 100


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[p.name for p in SAMPLE_RUNS])
def test_analyze_json(run: Path):
    proc = tftrace("analyze", "--json", run)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {p["pool"] for p in data["pools"]} >= {"inter-op", "intra-op"}
    assert sum(row["share"] for row in data["breakdown"]) == pytest.approx(1.0)
    inter = next(p for p in data["pools"] if p["pool"] == "inter-op")
    assert inter["configured"] == 2 and inter["threads"] == 2  # recorded with inter = 2


def test_analyze_bad_input(tmp_path: Path):
    proc = tftrace("analyze", tmp_path / "nothing")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such file" in proc.stderr
