"""One place decides what a command was given (one run, a sweep or a directory of hosts:
``kind_of``), and every flag means the same on a run and on a directory of hosts, or is refused
in one line. The hosts here are copies of the sample run (one without its trace)."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from layout.test_layout import imports_of, modules

import tftrace.analysis.analyze as analyze_module
from conftest import ROOT, SAMPLE_RUN
from conftest import tftrace as run_tftrace
from tftrace.analysis.cluster.layout import kind_of
from tftrace.analysis.cluster.reports import report_cluster
from tftrace.cli import main


def _hosts(root: Path) -> Path:
    """worker-0 and worker-1: the sample run; worker-2: without its trace."""
    job = root / "job"
    for name in ("worker-0", "worker-1", "worker-2"):
        shutil.copytree(SAMPLE_RUN, job / name)
    shutil.rmtree(job / "worker-2" / "plugins")
    return job


def _sweep(root: Path, data: Any) -> Path:
    sweep = root / "sweep"
    shutil.copytree(SAMPLE_RUN, sweep / "runs" / "a")
    (sweep / "sweep.json").write_text(json.dumps(data))
    return sweep


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return _hosts(tmp_path)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every ``tftrace.analysis.analyze.analyze`` call's options, the hosts analysed in this
    process (one thread) so that the calls can be counted."""
    calls: list[dict[str, Any]] = []
    real = analyze_module.analyze

    def counting(run: Any, **options: Any) -> Any:
        calls.append(options)
        return real(run, **options)

    monkeypatch.setattr(analyze_module, "analyze", counting)
    monkeypatch.setattr(
        "tftrace.analysis.cluster.analyze.default_executor", lambda jobs: ThreadPoolExecutor(1)
    )
    return calls


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("tftrace: error: "), err
    return lines[0]


# --- what a path is: decided once ------------------------------------------------------------


def test_kind_of(tmp_path: Path, job: Path):
    assert kind_of(SAMPLE_RUN) == "run"
    assert kind_of(job) == "hosts"
    assert kind_of(job / "worker-0") == "run"
    assert kind_of(tmp_path / "nothing") == "run"  # loading it says what is wrong
    assert kind_of(next(SAMPLE_RUN.rglob("*.xplane.pb"))) == "run"  # a bare trace
    assert kind_of(job / "worker-0" / "plugins") == "run"  # a TensorBoard log directory
    assert kind_of(_sweep(tmp_path, {})) == "sweep"  # damaged: its reader says so


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["threads", "{job}"], "threads: {job} is a directory of hosts, not one run"),
        (["tensorboard", "{job}", "--no-serve"], "is a directory of hosts, not one run"),
        (["summary", "{job}"], "is a directory of hosts, not one run or a sweep directory"),
        (["analyze", "{sweep}"], "analyze: {sweep} is a sweep directory"),
        (["report", "{sweep}"], "report: {sweep} is a sweep directory"),
        (["export", "{sweep}", "--format", "csv"], "export: {sweep} is a sweep directory"),
        (["threads", "{sweep}"], "threads: {sweep} is a sweep directory"),
        (["diff", "{sweep}", "{run}"], "diff: {sweep} is a sweep directory"),
        (["diff", "{job}"], "{job} is not a sweep directory"),
        (["diff", "{job}", "{run}"], "{run} is not a directory of hosts"),
        (["analyze", "{run}", "--dask", "local"], "--dask is for a directory of hosts"),
        (["analyze", "{job}", "--session", "s"], "analyze: --session picks a profile session"),
        (["analyze", "{job}", "--verify"], "analyze: --verify takes one run"),
        (["report", "{job}", "--session", "s"], "report: --session picks a profile session"),
        (["export", "{job}", "--format", "csv", "--session", "s"], "export: --session picks"),
        (["report", "{job}", "--cpus", "0"], "--cpus must be at least 1"),
        (["analyze", "{job}", "--cpus", "0"], "--cpus must be at least 1"),
    ],
)
def test_what_a_command_does_not_take_is_one_line(
    tmp_path: Path, job: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
):
    sweep = _sweep(tmp_path, {"kind": "tftrace-sweep"})
    paths = {"job": job, "sweep": sweep, "run": SAMPLE_RUN}
    assert main([a.format(**paths) for a in args]) == 2
    assert says.format(**paths) in one_line(capsys.readouterr().err)
    assert not list(job.rglob("report.html")) and not (job / "export").exists()  # no work


def test_a_sweep_json_of_another_kind_is_no_sweep_to_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert main(["diff", str(_sweep(tmp_path, {"kind": "something else"}))]) == 2
    assert "not a sweep directory" in one_line(capsys.readouterr().err)


# --- every analysis option reaches every host, once ----------------------------------------


def test_report_analyses_each_host_once_with_the_options(
    job: Path, tmp_path: Path, counted: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
):
    page = tmp_path / "job.html"
    argv = ["report", str(job), "--cpus", "2", "--window", "all", "--warmup-steps", "0"]
    assert main([*argv, "-o", str(page)]) == 0
    # worker-2 has no trace to analyse; the others once each, for the summary and the report
    assert counted == [{"window": "all", "warmup_steps": 0, "cpus": 2}] * 2
    assert (job / "worker-0" / "report.html").exists() and page.exists()
    out = capsys.readouterr().out
    assert "worker-2: no report: no trace to report" in out and "(3 hosts)" in out


def test_report_cluster_is_a_library_call(job: Path, counted: list[dict[str, Any]]):
    with ThreadPoolExecutor(1) as pool:
        done = report_cluster(job, executor=pool, cpus=3)
    assert done.page == job / "report.html" and done.page.exists()
    assert set(done.links) == {"worker-0", "worker-1"} and set(done.problems) == {"worker-2"}
    assert [h.usable_cpus for h in done.cluster.hosts[:2]] == [3, 3]  # as the analysis saw it
    assert len(counted) == 2


def test_analyze_cpus_means_the_same_for_a_run_and_each_host(job: Path):
    one = run_tftrace("analyze", job / "worker-0", "--cpus", "4", "--json")
    hosts = run_tftrace("analyze", job, "--cpus", "4", "--json")
    assert one.returncode == 0 and hosts.returncode == 0, (one.stderr, hosts.stderr)
    host = json.loads(hosts.stdout)["hosts"][0]
    assert host["usable_cpus"] == 4
    assert host["findings"] == json.loads(one.stdout)["findings"]


def test_diff_cpus_reaches_each_sides_hosts(
    job: Path, counted: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
):
    # each side's cross-host view as well as each host's diff: every analysis has --cpus
    assert main(["diff", str(job), str(job), "--cpus", "2", "--json"]) == 0
    assert len(counted) >= 4 and all(c.get("cpus") == 2 for c in counted), counted
    assert json.loads(capsys.readouterr().out)["hosts"][0]["speedup"] == 1.0


@pytest.mark.parametrize("hosts", [False, True], ids=["run", "hosts"])
def test_export_window_reaches_each_hosts_tables(
    hosts: bool, job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import tftrace.analysis.export.request_slices as request_slices

    asked: list[tuple[Any, ...]] = []
    real = request_slices.window_requests

    def recording(figures: Any) -> Any:
        asked.append((figures.window_arg, figures.warmup_arg))
        return real(figures)

    monkeypatch.setattr(request_slices, "window_requests", recording)
    path = job if hosts else job / "worker-0"
    argv = ["export", str(path), "--format", "csv", "--window", "2:3", "--warmup-steps", "0"]
    assert main([*argv, "-o", str(tmp_path / "csv")]) == 0
    assert asked == [("2:3", 0)] * (3 if hosts else 1)


# --- the layering that keeps commands thin ----------------------------------------------------


def test_analyze_does_not_import_the_sweep_command():
    found = modules()
    used = imports_of("tftrace.commands.analyze", found["tftrace.commands.analyze"], set(found))
    assert "tftrace.commands.sweep" not in used and "tftrace.commands.progress" in used


def test_no_command_decides_the_kind_itself():
    # kind_of is the one place: no command looks for manifests, sweep.json or hosts itself
    for path in (ROOT / "src" / "tftrace" / "commands").glob("*.py"):
        text = path.read_text()
        for own in ("is_cluster_dir", "is_sweep_dir", "sweep.json", "find_hosts"):
            assert own not in text, (path.name, own)
