"""The front door: ``import tftrace`` is light, its names are documented, and the library gives
exactly what the command line prints."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import tftrace
from conftest import EXAMPLES, SAMPLE_RUN, modules_loaded_by, quiet_env
from conftest import tftrace as cli

SAMPLE = SAMPLE_RUN


def test_import_is_light():
    assert not {"pandas", "numpy", "tensorflow", "rich"} & modules_loaded_by("tftrace")
    assert "tftrace" in modules_loaded_by("tftrace")  # the probe itself sees imports


@pytest.mark.parametrize("name", sorted(set(tftrace.__all__) - {"__version__"}))
def test_every_public_name_resolves_and_is_a_user_guide(name: str):
    value = getattr(tftrace, name)
    doc = inspect.getdoc(value) or ""
    assert len(doc) > 80, f"tftrace.{name} has no real docstring"
    if inspect.isfunction(value):
        # a user guide: what goes in, what comes out, and how it is used
        for part in ("Args:", "Returns:", "Example"):
            assert part in doc, f"tftrace.{name}'s docstring has no {part}"
    else:  # a type: how a value of it is used
        assert "Example" in doc or "::" in doc, f"tftrace.{name}'s docstring has no example"
    assert name in dir(tftrace)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = tftrace.nothing  # type: ignore[attr-defined]


# The sample's steady steps are a few ms: its findings are over the whole trace.
def test_analyze_is_what_the_command_line_prints():
    analysis = tftrace.analyze(tftrace.load(SAMPLE), window="all")
    proc = tftrace_cli_json(SAMPLE, "--window", "all")
    assert json.loads(json.dumps(analysis.to_json())) == proc
    assert [f.id for f in analysis.findings] == [f["id"] for f in proc["findings"]]
    order = list(tftrace.Severity)
    ranks = [(bool(f.consequence_of), order.index(f.severity)) for f in analysis.findings]
    assert ranks == sorted(ranks) and analysis.findings  # causes, then most severe first


def tftrace_cli_json(run: Path, *options: str) -> dict:
    proc = cli("analyze", "--json", *options, run)
    assert proc.returncode == 0, proc.stderr
    data: dict = json.loads(proc.stdout)
    return data


def test_str_of_an_analysis_is_the_terminal_report():
    analysis = tftrace.analyze(tftrace.load(SAMPLE), window="all")
    proc = cli("analyze", "--window", "all", SAMPLE)
    assert proc.returncode == 0, proc.stderr
    assert str(analysis) == proc.stdout


def test_jupyter_html_holds_the_tables_and_findings_escaped():
    import dataclasses
    import html

    analysis = tftrace.analyze(tftrace.load(SAMPLE), window="all")
    evil = tftrace.Finding(
        "x", tftrace.Severity.HIGH, None, "<script>alert(1)</script>", "do <b>this</b>"
    )
    page = dataclasses.replace(analysis, findings=(evil, *analysis.findings))._repr_html_()
    assert "<script>" not in page and html.escape("<script>alert(1)</script>") in page
    assert analysis.findings  # the whole sample trace is Python-bound
    for finding in analysis.findings:
        assert html.escape(finding.message) in page
    for title in ("Findings", "Pools", "Queue delay", "CPU truth", "Top op types"):
        assert f"<h2>{title}</h2>" in page
    for pool in analysis.pools["pool"]:
        assert f">{pool}<" in page
    # its styles stay inside the fragment: no rule for the notebook's own body or tables
    assert "\nbody {" not in page and "\ntable {" not in page and ".tftrace table {" in page


def test_a_bad_path_is_a_tftrace_error(tmp_path: Path):
    with pytest.raises(tftrace.TftraceError, match="nothing"):
        tftrace.load(tmp_path / "nothing")


@pytest.mark.slow
def test_record_from_code_then_analyze(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for key, value in quiet_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "2")
    result = tftrace.record(
        EXAMPLES / "eager_matmul.py",
        ["--size", "600", "--repeat", "3"],
        output=tmp_path / "run",
        pyspy=False,
        echo=False,
    )
    assert result.exit_code == 0 and result.run.path == tmp_path / "run"
    analysis = tftrace.analyze(tftrace.load(result.run.path))
    pools = analysis.pools.set_index("pool")
    # two Eigen workers, set by the environment the workload was given
    assert pools.loc["intra-op", "threads"] == 2
    assert pools.loc["intra-op", "peak"] == 2


def test_record_of_a_missing_script_is_a_tftrace_error(tmp_path: Path):
    with pytest.raises(tftrace.TftraceError, match=r"no_such_script\.py"):
        tftrace.record(tmp_path / "no_such_script.py", output=tmp_path / "run", echo=False)
    assert not (tmp_path / "run").exists()


def test_all_lists_every_lazy_name():
    lazy = set(tftrace._LAZY)  # type: ignore[attr-defined]
    assert set(tftrace.__all__) == lazy | {"TftraceError", "__version__"}


def test_reprs_are_one_line_summaries():
    run = tftrace.load(SAMPLE)
    analysis = tftrace.analyze(run, window="all")
    assert repr(run).startswith(f"<Run {SAMPLE}: ") and "\n" not in repr(run)
    assert f"{len(run.events)} events" in repr(run)
    assert repr(analysis) == (
        f"<Analysis of {SAMPLE}: {(analysis.window[1] - analysis.window[0]) / 1e9:.3f} s "
        f"window, {len(analysis.findings)} finding(s), "
        f"worst {analysis.findings[0].severity.value}>"
    )
