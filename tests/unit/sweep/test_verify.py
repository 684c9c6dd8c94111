"""Verification's plumbing on hand-built runs: the advised setting resolved against the run's
own, the setting each rule advises, and runs that cannot be verified (the judgement of the
timed runs is ``test_verify_judge.py``'s)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from builders import MS, events_table, make_run, threads_table
from conftest import SAMPLE_RUN, tftrace
from tftrace.analysis.analyze import analyze
from tftrace.analysis.findings.finding import AdvisedSetting, Expect, Finding, Severity, Status
from tftrace.analysis.findings.pool_rules import inline_ops
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import load
from tftrace.analysis.render.html_sections import finding as finding_html
from tftrace.analysis.sweep.verify import (
    VerifyError,
    advised,
    current_setting,
    verify,
    workload_of,
)
from tftrace.tracer.sweep import Setting


def test_advised_keeps_the_runs_own_size_where_it_says_none():
    now = Setting(2, 2)
    assert advised(AdvisedSetting(1, None, Expect.NOT_SLOWER), now) == Setting(1, 2)
    assert advised(AdvisedSetting(None, 4), now) == Setting(2, 4)


def test_inline_ops_advise_one_intra_thread_per_core():
    """Six 10 ms ops inline on a tf_Compute thread at intra 1 on 2 cores: ops-run-inline, its
    advised setting intra = the 2 cores, expected faster, and the JSON says so."""
    op = EventKind.OP.value
    rows = [(1, "MatMul:MatMul", op, 10 * i * MS, (10 * i + 10) * MS, None, None) for i in range(6)]
    rows.append((0, "marker", EventKind.ANNOTATION.value, 99 * MS, 100 * MS, None, None))
    manifest = {
        "host": {"cpu_affinity": [0, 1]},
        "pools": {"intra_op": {"size": 1}, "inter_op": {"size": 2}},
    }
    pools = [Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP]
    run = make_run(threads_table(pools, 100 * MS), events_table(rows), manifest=manifest)
    (f,) = inline_ops(run, analyze(run, window="all"))
    assert f.setting == AdvisedSetting(2, None, Expect.FASTER)
    assert f.to_json()["setting"] == {
        "intra": 2,
        "inter": None,
        "expect": "faster",
        "objective": None,
        "env": {},
        "cpus": None,
    }
    assert f.to_json()["verification"] is None


def test_a_bare_trace_cannot_be_verified(tmp_path: Path):
    (found,) = SAMPLE_RUN.glob("plugins/profile/*/*.xplane.pb")
    trace = tmp_path / found.name
    shutil.copy(found, trace)
    run = load(trace)
    with pytest.raises(VerifyError, match="needs a run directory"):
        workload_of(run)
    proc = tftrace("analyze", "--verify", trace)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "needs a run directory written by `tftrace record`" in proc.stderr


def test_a_workload_that_is_gone_cannot_be_verified(sample_run_copy: Path):
    manifest = json.loads((sample_run_copy / "manifest.json").read_text())
    manifest["target"] = {"kind": "script", "value": "no/such/script.py", "args": []}
    manifest["cwd"] = str(sample_run_copy)
    (sample_run_copy / "manifest.json").write_text(json.dumps(manifest))
    run = load(sample_run_copy)
    advice = Finding("x", Severity.LOW, None, "m", "a", setting=AdvisedSetting(1, None))
    with pytest.raises(VerifyError, match="no longer exists"):
        verify(run, dataclasses.replace(analyze(run), findings=(advice,)))
    assert current_setting(run).intra == run.manifest.pool("intra_op").size


def test_no_advised_setting_runs_nothing(sample_run_copy: Path):
    """Findings without a setting: the analysis comes back as it was, no directory made."""
    run = load(sample_run_copy)
    analysis = analyze(run)
    plain = dataclasses.replace(analysis, findings=())
    assert verify(run, plain) is plain
    assert not (sample_run_copy / "verify").exists()


def test_a_verified_finding_shows_its_outcome_escaped():
    from tftrace.analysis.findings.finding import Verification

    check = Verification(Status.CONFIRMED, (1, 1), (2, 1), 1.8, 1.7, 1.9, 5, "<b>2x</b>", "d")
    f = Finding("x", Severity.HIGH, None, "m", "a", {}, verification=check)
    html = finding_html(f)
    assert "verified: confirmed: &lt;b&gt;2x&lt;/b&gt;" in html
    assert f.to_json()["verification"]["speedup_range"] == [1.7, 1.9]


def test_advice_that_is_the_runs_own_setting_runs_nothing(sample_run_copy: Path):
    """Every advised setting equals the run's own: inconclusive, no workload started (the
    sample run's script is not on this machine, so a run would fail)."""
    run = load(sample_run_copy)
    now = current_setting(run)
    same = AdvisedSetting(now.intra, None)
    advice = Finding("x", Severity.LOW, None, "m", "a", setting=same)
    manifest = json.loads((sample_run_copy / "manifest.json").read_text())
    manifest["target"] = {"kind": "script", "value": __file__, "args": []}
    (sample_run_copy / "manifest.json").write_text(json.dumps(manifest))
    run = load(sample_run_copy)
    (checked,) = verify(run, dataclasses.replace(analyze(run), findings=(advice,))).findings
    assert checked.verification is not None
    assert checked.verification.status is Status.INCONCLUSIVE
    assert "run's own" in checked.verification.reason
    assert not (sample_run_copy / "verify").exists()


def test_a_symptom_of_code_advises_no_setting():
    """ops-too-small-to-split beside input-pipeline-starves-step: a consequence of a cause
    whose action is code keeps its figures but advises no setting; beside a cause that advises
    one, it keeps its own."""
    from tftrace.analysis.findings.diagnose import with_causes

    small = Finding(
        "ops-too-small-to-split",
        Severity.HIGH,
        Pool.INTRA_OP.value,
        "m",
        "a",
        setting=AdvisedSetting(1, None, Expect.NOT_SLOWER),
    )
    starved = Finding("input-pipeline-starves-step", Severity.HIGH, Pool.TF_DATA.value, "m", "a")
    marked = {f.id: f for f in with_causes([small, starved])}
    assert marked["ops-too-small-to-split"].consequence_of == ("input-pipeline-starves-step",)
    assert marked["ops-too-small-to-split"].setting is None
    underused = Finding(
        "underused-cores",
        Severity.MEDIUM,
        None,
        "m",
        "a",
        setting=AdvisedSetting(1, None, Expect.NOT_SLOWER),
    )
    marked = {f.id: f for f in with_causes([small, underused])}
    assert marked["underused-cores"].consequence_of == ("ops-too-small-to-split",)
    assert marked["underused-cores"].setting == AdvisedSetting(1, None, Expect.NOT_SLOWER)
