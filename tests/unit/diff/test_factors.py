"""The step time's two factors (busy thread-time, threads busy) and the verdict that takes
the machine's speed out: on hand-built samples, on the checked-in run against a reference
sum, and the workload's file digests that say two runs ran the same code."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tftrace
from conftest import SAMPLE_RUN
from tftrace.analysis.diff.factors import (
    WORKER_POOLS,
    StepFactors,
    explain,
    ops_differ,
    step_factors,
)
from tftrace.analysis.diff.manifest_diff import manifest_differences
from tftrace.analysis.diff.stats import FASTER, SAME, compare_samples, compare_steps
from tftrace.analysis.metrics.busy import merged_busy
from tftrace.tracer.child.sources_digest import workload_sources
from tftrace.tracer.manifest_reader import Manifest


def _noisy(median: float, n: int, seed: int, sd: float = 0.02) -> np.ndarray:
    return median * (1 + sd * np.random.default_rng(seed).standard_normal(n))


def test_compare_samples_gives_b_over_a():
    c = compare_samples(_noisy(10.0, 20, 1), _noisy(20.0, 20, 2))
    assert c.ratio == pytest.approx(2.0, rel=0.05) and c.significant
    assert c.interval is not None and c.interval[0] <= c.ratio <= c.interval[1]
    same = compare_samples(_noisy(10.0, 20, 3), _noisy(10.0, 20, 4))
    assert not same.significant
    few = compare_samples([1.0, 2.0], [3.0, 4.0])
    assert few.p_value is None and not few.significant


def _factors(threads_b: float, busy_b: float) -> StepFactors:
    return StepFactors(
        parallelism=compare_samples(_noisy(1.0, 12, 5, 0.005), _noisy(threads_b, 12, 6, 0.005)),
        busy_time=compare_samples(_noisy(60.0, 12, 7), _noisy(busy_b, 12, 8)),
    )


NO_DIFFERENCE = pd.DataFrame(columns=["what", "a", "b"])


def test_the_machine_alone_is_no_significant_difference():
    steps = compare_steps(_noisy(60.0, 12, 7), _noisy(51.0, 12, 8))  # B 15 % faster
    assert steps.verdict == FASTER
    machine = _factors(threads_b=1.0, busy_b=51.0)  # the same parallelism, less busy time
    assert not machine.parallelism_changed and machine.busy_time.significant
    d = explain(steps, machine, NO_DIFFERENCE, [])
    assert d.verdict == SAME and d.per_step_verdict == FASTER
    assert "the machine's" in d.reason and "threads busy per step" in d.reason
    assert d.speedup == steps.speedup and d.p_value == steps.p_value  # the figures stay
    assert d.to_json()["per_step_verdict"] == FASTER


def test_a_difference_the_workload_can_explain_stands():
    steps = compare_steps(_noisy(60.0, 12, 7), _noisy(51.0, 12, 8))
    machine = _factors(threads_b=1.0, busy_b=51.0)
    settings = pd.DataFrame([("inter_op pool size", "1", "2")], columns=["what", "a", "b"])
    for d in (
        explain(steps, machine, settings, []),  # something the manifests record differs
        explain(steps, machine, NO_DIFFERENCE, ["Conv2D"]),  # another graph
        explain(steps, _factors(threads_b=1.2, busy_b=61.0), NO_DIFFERENCE, []),  # parallelism
    ):
        assert d.verdict == FASTER and d.per_step_verdict is None
        assert "threads busy per step" in d.reason
    # a change in parallelism within the tolerance is no change
    assert not _factors(threads_b=1.03, busy_b=51.0).parallelism_changed


def test_ops_differ_names_the_op_types_run_more_or_less_often():
    a = pd.Series({"MatMul": 2.0, "Add": 1.0, "Relu": 100.0})
    b = pd.Series({"MatMul": 2.0, "Conv2D": 1.0, "Relu": 102.0})  # Relu within 5 %
    assert ops_differ(a, b) == ["Add", "Conv2D"]
    assert ops_differ(a, a) == []


def test_step_factors_add_up_to_the_busy_time_of_each_step():
    analysis = tftrace.analyze(tftrace.load(SAMPLE_RUN))
    f = step_factors(analysis)
    table = analysis.steps.table
    assert len(f) == len(table) > 0
    assert np.allclose(f["threads_busy"] * f["ms"], f["busy_ms"])
    # the reference: each pool thread's busy intervals clipped to each step, one by one
    run = analysis.run
    lo, hi = int(table["start_ns"].min()), int(table["end_ns"].max())
    every = merged_busy(run, lo, hi)
    workers = run.threads.loc[run.threads["pool"].isin(WORKER_POOLS), "thread"]
    for row, busy_ms in zip(table.itertuples(), f["busy_ms"], strict=True):
        total = 0
        for t in workers:
            s, e = every.get(int(t), (np.zeros(0), np.zeros(0)))
            total += int(
                np.clip(np.minimum(e, row.end_ns) - np.maximum(s, row.start_ns), 0, None).sum()
            )
        assert busy_ms == pytest.approx(total / 1e6, rel=1e-9, abs=1e-6)
    assert (f["threads_busy"] > 0).all()  # the sample's steps run ops on the inter-op pool


def test_workload_sources_are_the_users_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    module = tmp_path / "my_model_code.py"
    module.write_text("LAYERS = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_model_code", raising=False)
    __import__("my_model_code")
    sources = workload_sources(cwd=str(tmp_path))
    assert sources["my_model_code.py"] == hashlib.sha256(b"LAYERS = 3\n").hexdigest()
    assert not any("site-packages" in p or p.endswith("pandas/__init__.py") for p in sources)
    assert not any(
        p.endswith(("tracer/child/sources_digest.py", "tftrace/cli.py")) for p in sources
    )
    # this file: the user's
    assert any(p.endswith("tests/unit/diff/test_factors.py") for p in sources)


def _with_sources(sources: dict[str, str]) -> Manifest:
    import json

    data = json.loads((SAMPLE_RUN / "manifest.json").read_text())
    data["workload"] = {**data["workload"], "sources": sources}
    return Manifest.from_json(data)


def test_a_changed_source_file_is_a_manifest_difference():
    a = _with_sources({"train.py": "a" * 64, "model.py": "b" * 64})
    b = _with_sources({"train.py": "a" * 64, "model.py": "c" * 64})
    rows = manifest_differences(a, b).set_index("what")
    assert rows.loc["source model.py (sha256)"].tolist() == ["b" * 16, "c" * 16]
    assert "source train.py (sha256)" not in rows.index
    assert manifest_differences(a, a).empty
