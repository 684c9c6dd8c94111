"""Settings beyond the pool sizes: environment variables and the CPUs a run is pinned to.

Fast tests on hand-built inputs: the product a sweep crosses, its labels, what it refuses, a
finding's ``AdvisedSetting`` with ``env`` / ``cpus`` and its JSON, the run's own setting a
verification reproduces (a variable the recording did not have is removed), and the tables
and verdict of a sweep with such knobs. Two real runs (marked slow): a sweep crossing
``--env`` with ``--intra`` and ``--cpus``, and a verification of an advised variable and CPU
count, each checked against what the workload itself printed it was given.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from builders import make_run
from conftest import WORKLOADS, quiet_env, tftrace
from tftrace.analysis.findings.finding import (
    AdvisedSetting,
    Expect,
    Finding,
    Severity,
    Status,
    Verification,
)
from tftrace.analysis.sweep.plan import MAX_SETTINGS, settings_of
from tftrace.analysis.sweep.result import build
from tftrace.analysis.sweep.stats import setting_of
from tftrace.analysis.sweep.verify import advised, current_setting, mark, sized_by_cpus
from tftrace.tracer.sweep import Setting, SweepError
from tftrace.tracer.sweep_setting import Axes, parse_cpus, parse_env

OPENBLAS = "OPENBLAS_NUM_THREADS"
STEPS = "steady state over tf.function 'step' calls"


# ---------------------------------------------------------------- the product and its words


def test_the_sweep_crosses_every_knob_first_values_first():
    axes = Axes([1, 2], [None], parse_env(["OMP_NUM_THREADS=1,2"]), parse_cpus("1,2", 2))
    settings = settings_of(axes)
    assert axes.count() == len(settings) == 8
    assert len(set(settings)) == 8
    # the intra-op size varies fastest, the CPUs slowest; the first is every knob's first
    assert [(s.intra, dict(s.env_vars)["OMP_NUM_THREADS"], s.cpus) for s in settings[:4]] == [
        (1, "1", 1),
        (2, "1", 1),
        (1, "2", 1),
        (2, "2", 1),
    ]
    assert settings[0].label() == "intra 1 · inter default · OMP_NUM_THREADS=1 · 1 CPU"
    assert settings[-1].label() == "intra 2 · inter default · OMP_NUM_THREADS=2 · 2 CPUs"
    assert axes.words() == "intra 1,2 x OMP_NUM_THREADS 1,2 x cpus 1,2"


def test_two_variables_cross_each_other():
    env = parse_env({"TF_ENABLE_ONEDNN_OPTS": [0, 1], "OMP_NUM_THREADS": "1,2"})
    settings = Axes([1], [None], env).settings()
    assert [dict(s.env_vars) for s in settings] == [
        {"TF_ENABLE_ONEDNN_OPTS": a, "OMP_NUM_THREADS": b} for b in ("1", "2") for a in ("0", "1")
    ]


def test_a_setting_gives_its_variables_and_its_cpus():
    s = Setting(1, None, env_vars=((OPENBLAS, "1"), ("MKL_NUM_THREADS", None)), cpus=1)
    assert s.env() == {"TF_NUM_INTRAOP_THREADS": "1", OPENBLAS: "1", "MKL_NUM_THREADS": None}
    assert s.pinned([3, 1, 2]) == (1,) and Setting(1, None).pinned([0, 1]) is None
    assert (
        s.label()
        == "intra 1 · inter default · OPENBLAS_NUM_THREADS=1 · MKL_NUM_THREADS unset · 1 CPU"
    )
    assert s.slug() == "intra1-interdefault-OPENBLAS_NUM_THREADS-1-MKL_NUM_THREADS-unset-cpus1"
    assert list(s.columns().items()) == [
        ("intra", 1),
        ("inter", None),
        (OPENBLAS, "1"),
        ("MKL_NUM_THREADS", None),
        ("cpus", 1),
    ]
    assert Setting.from_json(s.to_json()) == s
    assert s.to_json()["env"] == {OPENBLAS: "1", "MKL_NUM_THREADS": None}
    # a plain setting is written and told apart as it always was
    assert Setting(1, None).to_json() == {"intra": 1, "inter": None}
    assert Setting(1, None).key() == (1, None)
    # a value that is not safe in a path still makes its own directory
    odd = [Setting(1, None, env_vars=(("KMP_AFFINITY", v),)).slug() for v in ("a/b", "a_b")]
    assert odd[0] != odd[1] and "/" not in odd[0]


def test_threads_and_cpus_count_in_the_tie_break():
    one, two = (Setting(1, 1, env_vars=((OPENBLAS, v),)) for v in ("1", "2"))
    assert one.threads(2) < two.threads(2)
    assert Setting(None, None, cpus=1).threads(4) == 2  # TF's defaults follow the pinned CPUs


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (["omp_num_threads=1"], "not an environment variable's name"),
        (["OMP;rm -rf=1"], "not an environment variable's name"),
        (["A B=1"], "not an environment variable's name"),
        (["=1"], "not an environment variable's name"),
        (["LD_PRELOAD=/tmp/x.so"], "chooses which code runs"),
        (["PYTHONPATH=/tmp"], "chooses which code runs"),
        (["TF_NUM_INTRAOP_THREADS=1,2"], "sizes a pool: give the sizes as intra/inter"),
        (["OMP_NUM_THREADS"], "give NAME=V1,V2"),
        (["OMP_NUM_THREADS="], "an empty value"),
        (["OMP_NUM_THREADS=1,,2"], "an empty value"),
        (["OMP_NUM_THREADS=1", "OMP_NUM_THREADS=2"], "given twice"),
        ("OMP_NUM_THREADS=1", "give a list"),
        ({"OMP_NUM_THREADS": []}, "no values"),
    ],
)
def test_bad_variables_are_refused(spec: Any, words: str):
    with pytest.raises(SweepError, match=words) as e:
        parse_env(spec)
    assert "\n" not in str(e.value)


def test_cpu_counts_must_fit_the_usable_cpus():
    assert parse_cpus(None, 2) == [None] and parse_cpus("2,1,2", 2) == [2, 1]
    for bad, words in (("0", "give 1 to 2"), ("3", "give 1 to 2"), ("x", "not a number")):
        with pytest.raises(SweepError, match=words):
            parse_cpus(bad, 2)


def test_an_absurd_product_is_refused_before_it_is_built():
    values = ",".join(map(str, range(12)))
    axes = Axes(
        [1, 2], [None], parse_env([f"OMP_NUM_THREADS={values}", f"MKL_NUM_THREADS={values}"])
    )
    assert axes.count() == 288 > MAX_SETTINGS
    with pytest.raises(SweepError, match=r"288 settings \(intra 1,2 x OMP_NUM_THREADS") as e:
        settings_of(axes)
    assert "\n" not in str(e.value)


def test_the_library_and_the_command_refuse_bad_knobs(tmp_path: Path):
    from tftrace.analysis.sweep.session import sweep

    script = tmp_path / "workload.py"
    script.write_text("")
    out = tmp_path / "sweep"
    with pytest.raises(SweepError, match="--cpus and --instances both choose the CPUs"):
        sweep(script, output=out, cpus=[1], instances=[1])
    with pytest.raises(SweepError, match="chooses which code runs"):
        sweep(script, output=out, env={"LD_PRELOAD": ["x.so"]})
    assert not out.exists()
    done = tftrace("sweep", "-o", out, "--env", "LD_AUDIT=x", "--intra", "1", script)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "LD_AUDIT chooses which code runs" in lines[0]
    assert not out.exists()


# ---------------------------------------------------------------- a finding's advised setting


def test_an_advised_setting_with_variables_and_cpus_round_trips_through_json():
    advice = AdvisedSetting(intra=1, env={OPENBLAS: "1"}, cpus=1, expect=Expect.NOT_SLOWER)
    assert advice.label() == "intra 1, OPENBLAS_NUM_THREADS=1, 1 CPU"
    data = advice.to_json()
    assert data == {
        "intra": 1,
        "inter": None,
        "expect": "not-slower",
        "objective": None,
        "env": {OPENBLAS: "1"},
        "cpus": 1,
    }
    assert AdvisedSetting.from_json(json.loads(json.dumps(data))) == advice
    # written before env and cpus existed
    old = {"intra": 2, "inter": None, "expect": "faster", "objective": "p99"}
    assert AdvisedSetting.from_json(old) == AdvisedSetting(2, None, Expect.FASTER, "p99")
    # positional, as every rule has made them
    assert AdvisedSetting(1, None, Expect.NOT_SLOWER).env == {}
    assert AdvisedSetting().label() == "the run's own setting"
    with pytest.raises(ValueError, match="sizes a pool"):
        AdvisedSetting(env={"TF_NUM_INTEROP_THREADS": "1"})
    with pytest.raises(ValueError, match="cpus"):
        AdvisedSetting(cpus=0)


def _run(env: dict[str, str], intra_source: str = "default (schedulable CPUs)") -> Any:
    manifest = {
        "host": {"cpu_affinity": [0, 1]},
        "env": env,
        "pools": {
            "intra_op": {"size": 2, "source": intra_source},
            "inter_op": {"size": 2, "source": "env"},
        },
    }
    return make_run(manifest=manifest)


def _advice(setting: AdvisedSetting, name: str = "x") -> Finding:
    return Finding(name, Severity.MEDIUM, None, "m", "a", setting=setting)


def test_the_runs_own_setting_removes_a_variable_the_recording_did_not_have():
    setting = AdvisedSetting(env={OPENBLAS: "1"})
    advice = _advice(setting)
    now = current_setting(_run({}), [advice])
    assert now == Setting(2, 2, env_vars=((OPENBLAS, None),))
    # removed from the baseline's environment, whatever the verifying process has
    assert now.env()[OPENBLAS] is None
    assert advised(setting, now).env()[OPENBLAS] == "1"
    # the recording had it: the baseline keeps its value
    had = current_setting(_run({OPENBLAS: "4", "OMP_NUM_THREADS": "2"}), [advice])
    assert had.env_vars == ((OPENBLAS, "4"),)


def test_a_variable_the_manifest_does_not_keep_is_this_processs(monkeypatch):
    monkeypatch.setenv("ZZ_KNOB", "7")
    advice = _advice(AdvisedSetting(env={"ZZ_KNOB": "1"}))
    assert current_setting(_run({}), [advice]).env_vars == (("ZZ_KNOB", "7"),)


def test_advised_cpus_pin_and_a_default_pool_follows_them():
    run = _run({})
    now = current_setting(run)
    assert sized_by_cpus(run) == {"intra"}
    pinned = advised(AdvisedSetting(cpus=1), now, sized_by_cpus(run))
    # TF sized intra-op by the CPUs: on one, one; inter-op came from the environment: kept
    assert (pinned.intra, pinned.inter, pinned.cpus) == (1, 2, 1)
    assert advised(AdvisedSetting(intra=2, cpus=1), now, sized_by_cpus(run)).intra == 2


def _row(setting: Setting, round_: int, time_s: float) -> dict[str, Any]:
    """A timed run's row as ``runs.time_run`` writes it, for a loop of 5 steps."""
    return {
        **setting.columns(),
        "round": round_,
        "time_s": time_s,
        "span_s": 5 * time_s,
        "steps": 5,
        "cpu_util": 0.5,
        "basis": STEPS,
        "wall_s": 3.0,
        "process_cpu_s": 2.0,
        "path": f"/runs/{setting.slug()}-{round_}",
        "server": False,
        "per_s": 1 / time_s,
        **dict.fromkeys(("p50_ms", "p90_ms", "p99_ms", "max_ms")),
        "intra_effective": setting.intra or setting.cpus or 2,
        "inter_effective": setting.inter or setting.cpus or 2,
        **{f"{k}_source": "env" for k in ("intra", "inter")},
        "intra_calls": [],
        "inter_calls": [],
    }


def test_verification_times_each_advice_by_its_whole_setting():
    """Two findings, one advising OPENBLAS_NUM_THREADS=1, one intra 1: the runs carry the
    variable on every side (unset where the advice does not set it), each finding is judged
    on its own rows, and its verification says what each side ran with."""
    run = _run({})
    fewer_blas = AdvisedSetting(env={OPENBLAS: "1"})
    one_intra = AdvisedSetting(intra=1, expect=Expect.NOT_SLOWER)
    blas, intra = _advice(fewer_blas, "blas"), _advice(one_intra, "intra")
    now = current_setting(run, [blas, intra])
    runs = pd.DataFrame(
        [
            _row(s, r, t * (1 + 0.002 * r))
            for r in range(7)
            for s, t in (
                (now, 1.0),
                (advised(fewer_blas, now), 0.5),
                (advised(one_intra, now), 1.0),
            )
        ]
    ).astype({"intra": "Int64", "inter": "Int64"})
    checked = {
        f.id: f.verification for f in mark(_Findings((blas, intra)), runs, now, Path("v")).findings
    }
    v = checked["blas"]
    assert isinstance(v, Verification) and v.status is Status.CONFIRMED
    assert v.speedup == pytest.approx(2.0, rel=0.01)
    assert (v.current_env, v.advised_env) == ({OPENBLAS: None}, {OPENBLAS: "1"})
    assert v.reason.startswith(
        "intra 2 · inter 2 · OPENBLAS_NUM_THREADS=1 ran faster than "
        "intra 2 · inter 2 · OPENBLAS_NUM_THREADS unset"
    )
    assert v.to_json()["advised"] == {"intra": 2, "inter": 2, "env": {OPENBLAS: "1"}, "cpus": None}
    w = checked["intra"]
    assert w is not None and w.status is Status.CONFIRMED and w.advised == (1, 2)
    assert "OPENBLAS" not in w.reason and w.advised_env == {}


@dataclasses.dataclass(frozen=True)
class _Findings:
    """What ``mark`` reads of an Analysis: its findings."""

    findings: tuple[Finding, ...]


# ---------------------------------------------------------------- a sweep's tables and verdict


def _crossed_result() -> Any:
    """intra 1, 2 x OPENBLAS_NUM_THREADS 1, 2, pinned to 1 CPU: OPENBLAS 1 is twice as fast
    at either size; the sizes are within noise of each other."""
    settings = Axes([1, 2], [None], parse_env({OPENBLAS: [1, 2]}), [1]).settings()
    times = {"1": 0.5, "2": 1.0}
    rows = [
        _row(s, r, times[dict(s.env_vars)[OPENBLAS]] * (1 + 0.01 * r + 0.001 * i))
        for r in range(3)
        for i, s in enumerate(settings)
    ]
    return build(rows, 2, settings[0], ["blas.py"])


def test_the_table_has_a_column_per_variable_and_the_cpus(capsys):
    from tftrace.analysis.sweep.report import render, to_json

    result = _crossed_result()
    t = result.table
    assert list(t[OPENBLAS]) == ["1", "1", "2", "2"] and list(t["cpus"]) == [1, 1, 1, 1]
    assert [setting_of(r).label() for _, r in t.iterrows()][2] == (
        "intra 1 · inter default · OPENBLAS_NUM_THREADS=2 · 1 CPU"
    )
    # both OPENBLAS 1 settings tie; the baseline is one of them
    assert result.verdict.kind == "no-difference"
    assert result.recommended == Setting(1, None, env_vars=((OPENBLAS, "1"),), cpus=1)
    assert any(
        "intra 2 · inter default · OPENBLAS_NUM_THREADS=1 · 1 CPU asks" in w
        for w in result.warnings
    )
    render(result)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "4 settings: intra 1,2 x OPENBLAS_NUM_THREADS 1,2" in out
    header = next(line for line in out.splitlines() if "intra" in line and "speedup" in line)
    assert OPENBLAS in header and "cpus" in header
    data = to_json(result)
    first = data["settings"][0]
    assert first["env"] == {OPENBLAS: "1"} and first["cpus"] == 1 and OPENBLAS not in first
    assert data["runs"][0]["env"] == {OPENBLAS: "1"}
    assert data["verdict"]["recommended"] == {
        "intra": 1,
        "inter": None,
        "env": {OPENBLAS: "1"},
        "cpus": 1,
    }
    assert Setting.from_json(data["settings"][3]) == setting_of(result.table.iloc[3])


def test_the_recommendation_names_the_winning_variables_and_cpus():
    settings = Axes([1], [None], parse_env({OPENBLAS: [2, 1]}), [2, 1]).settings()
    times = {("2", 2): 1.0, ("1", 2): 0.5, ("2", 1): 1.0, ("1", 1): 0.51}
    rows = [
        _row(s, r, times[(dict(s.env_vars)[OPENBLAS], s.cpus)] * (1 + 0.01 * r))
        for r in range(3)
        for s in settings
    ]
    result = build(rows, 2, settings[0], ["blas.py"])
    # OPENBLAS 1 on one CPU is as fast as on two: fewer CPUs win the tie
    assert result.recommended == Setting(1, None, env_vars=((OPENBLAS, "1"),), cpus=1)
    assert result.recommendation[0].startswith(
        "Use intra 1 · inter default · OPENBLAS_NUM_THREADS=1 · 1 CPU: 1.96x faster than "
        "intra 1 · inter default · OPENBLAS_NUM_THREADS=2 · 2 CPUs"
    )


# ---------------------------------------------------------------- real runs


def _output(run: Path) -> dict[str, str]:
    """What the env_steps workload printed it was given: CPUS and each ENV NAME."""
    lines = (run / "workload" / "stdout.log").read_text().splitlines()
    out = {}
    for line in lines:
        if line.startswith("CPUS="):
            out["CPUS"] = line.removeprefix("CPUS=")
        elif line.startswith("ENV "):
            name, _, value = line.removeprefix("ENV ").partition("=")
            out[name] = value
    return out


@pytest.mark.slow
def test_a_sweep_crosses_a_variable_with_the_pool_sizes(tmp_path: Path):
    """--env OMP_NUM_THREADS=1,2 x --intra 1,2, pinned to one CPU: four settings, each in the
    table with its value, and each run's process had that value and that one CPU."""
    out = tmp_path / "s"
    done = tftrace(
        "sweep", "-o", out, "--json", "--repeat", "1", "--no-explain",
        "--intra", "1,2", "--env", "OMP_NUM_THREADS=1,2", "--cpus", "1",
        WORKLOADS / "env_steps.py", "4", "OMP_NUM_THREADS",
        env=quiet_env(OMP_NUM_THREADS="5"),
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    got = [(s["intra"], s["env"]["OMP_NUM_THREADS"], s["cpus"]) for s in data["settings"]]
    assert got == [(1, "1", 1), (2, "1", 1), (1, "2", 1), (2, "2", 1)]
    first_cpu = str(min(os.sched_getaffinity(0)))
    for run in data["runs"]:
        path = out / run["path"]
        printed = _output(path)
        assert printed == {"CPUS": first_cpu, "OMP_NUM_THREADS": run["env"]["OMP_NUM_THREADS"]}
        manifest = json.loads((path / "manifest.json").read_text())
        assert manifest["env"]["OMP_NUM_THREADS"] == run["env"]["OMP_NUM_THREADS"]
        assert manifest["recording"]["pinned_cpus"] == [int(first_cpu)]
        assert run["intra_effective"] == run["intra"]
    shown = tftrace("summary", out)
    assert shown.returncode == 0, shown.stderr
    assert "4 settings: intra 1,2 x OMP_NUM_THREADS 1,2" in " ".join(shown.stdout.split())


@pytest.mark.slow
def test_a_verification_runs_the_advised_variable_and_cpus(tmp_path: Path, monkeypatch):
    """A recorded run without OMP_NUM_THREADS, and a hand-made finding advising
    OMP_NUM_THREADS=1 on one CPU: the advised runs had both, the run's own had neither (the
    variable removed although the verifying process has it)."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.model.run import load
    from tftrace.analysis.sweep.verify import verify

    run_dir = tmp_path / "run"
    script = WORKLOADS / "env_steps.py"
    done = tftrace("record", "-o", run_dir, "--no-pyspy", script, "6", "OMP_NUM_THREADS")
    assert done.returncode == 0, done.stderr
    run = load(run_dir)
    assert "OMP_NUM_THREADS" not in run.manifest.env
    advice = AdvisedSetting(env={"OMP_NUM_THREADS": "1"}, cpus=1, expect=Expect.NOT_SLOWER)
    finding = _advice(advice, "omp")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    analysis = dataclasses.replace(analyze(run), findings=(finding,))
    (checked,) = verify(run, analysis, repeat=1).findings
    v = checked.verification
    assert v is not None and v.status is Status.INCONCLUSIVE  # one run each: too few
    assert (v.current_env, v.advised_env) == ({"OMP_NUM_THREADS": None}, {"OMP_NUM_THREADS": "1"})
    assert (v.current_cpus, v.advised_cpus) == (None, 1)
    usable = sorted(os.sched_getaffinity(0))
    seen = {}
    for path in sorted((run_dir / "verify" / "runs").iterdir()):
        manifest = json.loads((path / "manifest.json").read_text())
        seen[_output(path)["OMP_NUM_THREADS"]] = (_output(path)["CPUS"], manifest)
    assert set(seen) == {"unset", "1"}
    assert seen["unset"][0] == ",".join(map(str, usable))
    assert "OMP_NUM_THREADS" not in seen["unset"][1]["env"]
    assert seen["1"][0] == str(usable[0]) and seen["1"][1]["env"]["OMP_NUM_THREADS"] == "1"
    # the recording's intra-op pool was TF's default: on one CPU, one thread
    assert seen["1"][1]["pools"]["intra_op"]["size"] == 1
