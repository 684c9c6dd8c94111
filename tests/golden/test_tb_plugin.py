"""The Thread pools tab's plugin: its routes answer the analysis of the sample runs as JSON,
through TensorBoard's own WSGI routing; runs are found, cached beside them and recomputed when
stale; a bad run answers an error naming it, and the server goes on."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.application import TensorBoardWSGI
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from conftest import ROOT, SAMPLE_TRACES, modules_loaded_by, quiet_env
from tftrace.analysis.analyze import analyze
from tftrace.analysis.diff import diff
from tftrace.analysis.metrics.figures import concurrency_stack
from tftrace.analysis.model.run import load
from tftrace.analysis.render import census_text
from tftrace.analysis.render.core_use_text import headline
from tftrace.analysis.tensorboard_plugin import PLUGIN_NAME, TAB_NAME
from tftrace.analysis.tensorboard_plugin.cache import CACHE_FILE, DashboardCache, compute
from tftrace.analysis.tensorboard_plugin.plugin import ThreadPoolsPlugin
from tftrace.analysis.tensorboard_plugin.runs import find_runs, fingerprint

ROUTE = f"/data/plugin/{PLUGIN_NAME}"
STATIC = ROOT / "analysis" / "tensorboard_plugin" / "static"


def make_logdir(root: Path) -> Path:
    """Two sample runs (one nested), a folder that is no run, a manifest of another tool and
    a run without a trace."""
    logdir = root / "logs"
    shutil.copytree(SAMPLE_TRACES / "tf-2.18", logdir / "old")
    shutil.copytree(SAMPLE_TRACES / "tf-2.21", logdir / "group" / "new")
    (logdir / "notes").mkdir()
    (logdir / "other").mkdir()
    (logdir / "other" / "manifest.json").write_text(json.dumps({"kind": "something-else"}))
    # a sweep's timing run: a tftrace manifest, but no trace to show
    untraced = shutil.copytree(SAMPLE_TRACES / "tf-2.21", logdir / "sweep" / "intra1-r1")
    shutil.rmtree(untraced / "plugins")
    return logdir


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_logdir(tmp_path_factory.mktemp("tb-plugin"))


def client_for(plugin: ThreadPoolsPlugin) -> Client:
    return Client(TensorBoardWSGI([plugin]))


def plugin_for(logdir: Path) -> ThreadPoolsPlugin:
    return ThreadPoolsPlugin(base_plugin.TBContext(logdir=str(logdir)))


@pytest.fixture(scope="module")
def client(logdir: Path) -> Client:
    return client_for(plugin_for(logdir))


def get_json(client: Client, path: str, code: int = 200) -> Any:
    response = client.get(f"{ROUTE}{path}")
    assert response.status_code == code, response.get_data(as_text=True)[:500]
    assert response.mimetype == "application/json"
    return json.loads(response.get_data(as_text=True))


def test_runs_are_the_tftrace_run_directories(client: Client, logdir: Path) -> None:
    listing = get_json(client, "/runs")
    assert listing["logdir"] == str(logdir)
    assert [r["name"] for r in listing["runs"]] == ["group/new", "old"]
    assert {r["status"] for r in listing["runs"]} == {"complete"}
    assert find_runs(logdir / "old")["."].path == logdir / "old"  # the log dir is a run itself


def test_run_route_is_the_analysis(client: Client, logdir: Path) -> None:
    data = get_json(client, "/run?run=group/new")
    analysis = analyze(load(logdir / "group" / "new"))
    assert data["name"] == "group/new" and data["run"] == str(logdir / "group" / "new")
    assert data["headline"] == headline(analysis) and data["headline"]
    assert [f["id"] for f in data["findings"]] == [f.id for f in analysis.findings]
    for sent, finding in zip(data["findings"], analysis.findings, strict=True):
        assert sent["evidence"] == json.loads(json.dumps(finding.evidence))
        assert sent["verification"] is None and "setting" in sent
    assert [p["pool"] for p in data["pools"]] == analysis.pools["pool"].tolist()
    assert [p["mean"] for p in data["pools"]] == pytest.approx(analysis.pools["mean"].tolist())
    assert [q["p99_us"] for q in data["queue_delay"]] == pytest.approx(
        analysis.queue_delay["p99_us"].tolist()
    )
    # concurrency over time: the report's figure, per pool
    stack = concurrency_stack([analysis.concurrency[p] for p in analysis.concurrency])
    assert data["concurrency"]["t_s"] == pytest.approx(stack["t_s"].tolist())
    for pool, values in data["concurrency"]["pools"].items():
        assert values == pytest.approx(stack[pool].tolist())
    assert data["concurrency"]["cores"] == 2
    assert sum(b["closures"] for b in data["queue_delay_distribution"]) == sum(
        analysis.queue_delay["closures"]
    )
    # every step, with its breakdown and each pool's concurrency
    steps = data["steps"]
    assert [p["step"] for p in steps["points"]] == analysis.steps.table["step"].tolist()
    assert steps["count"] == len(analysis.steps.table) and not steps["binned"]
    assert [p["idle"] for p in steps["points"]] == pytest.approx(
        analysis.steps.table["idle"].tolist()
    )
    assert {"concurrency/inter-op", "concurrency/intra-op"} <= set(steps["points"][0])
    # the threads with their pool and evidence; trace line ids exact, as text
    assert len(data["threads"]) == len(analysis.run.threads)
    line_ids = {str(i) for i in analysis.run.threads["line_id"].dropna()}
    assert {t["line_id"] for t in data["threads"] if t["line_id"]} == line_ids
    assert all(t["evidence"] and t["pool"] for t in data["threads"])
    # every thread by pool against the CPUs: the terminal's table
    assert analysis.census is not None
    assert data["census_view"]["rows"] == [list(r) for r in census_text.rows(analysis)]
    assert data["census_view"]["title"] == census_text.title(analysis)


def test_diff_route_is_tftrace_diff(client: Client, logdir: Path) -> None:
    data = get_json(client, "/diff?a=old&b=group/new")
    expected = diff(load(logdir / "old"), load(logdir / "group" / "new")).to_json()
    assert (data["a_name"], data["b_name"]) == ("old", "group/new")
    assert data["step_time"]["verdict"] == expected["step_time"]["verdict"]
    assert data["step_time"]["speedup"] == pytest.approx(expected["step_time"]["speedup"])
    assert len(data["pools"]) == len(expected["pools"])
    for sent, row in zip(data["pools"], expected["pools"], strict=True):
        assert (sent["pool"], sent["figure"]) == (row["pool"], row["figure"])
        assert (sent["a"], sent["b"]) == pytest.approx((row["a"], row["b"]))
    assert data["manifest"] == expected["manifest"]


def test_unknown_and_bad_runs_answer_an_error_naming_them(tmp_path: Path) -> None:
    logdir = make_logdir(tmp_path)
    (xplane,) = (logdir / "old").glob("plugins/profile/*/*.xplane.pb")
    xplane.write_bytes(b"\x0a\xff\xff\xff not a trace")
    client = client_for(plugin_for(logdir))
    missing = get_json(client, "/run?run=nothing", 404)
    assert missing["run"] == "nothing" and "nothing" in missing["error"]
    bad = get_json(client, "/run?run=old", 500)
    assert bad["run"] == "old" and "xplane" in bad["error"]
    assert "error" in get_json(client, "/diff?a=old&b=group/new")
    assert get_json(client, "/diff?a=old&b=gone", 404)["run"] == "gone"
    assert get_json(client, "/run?run=group/new")["name"] == "group/new"  # the server goes on


def test_the_analysis_is_cached_beside_the_run_and_recomputed_when_stale(tmp_path: Path) -> None:
    run = shutil.copytree(SAMPLE_TRACES / "tf-2.21", tmp_path / "run")
    calls: list[Path] = []

    def counting(path: Path) -> dict[str, Any]:
        calls.append(path)
        return compute(path)

    first = DashboardCache(counting).get(run)
    cached = run / "tftrace" / CACHE_FILE
    stored = json.loads(cached.read_text())
    assert stored["key"] == fingerprint(run) and stored["dashboard"] == first
    assert any(f[0].endswith(".xplane.pb") for f in stored["key"]["files"])
    # a new server (a fresh cache) reads the file: no second analysis
    assert DashboardCache(counting).get(run) == first and len(calls) == 1
    # what is read is the file's: a changed dashboard comes back as written
    cached.write_text(json.dumps({**stored, "dashboard": {"marker": 1}}))
    assert DashboardCache(counting).get(run) == {"marker": 1} and len(calls) == 1
    # a recorded file changed: computed again
    identity = run / "thread_identity.json"
    os.utime(identity, ns=(identity.stat().st_atime_ns, identity.stat().st_mtime_ns + 10**9))
    assert DashboardCache(counting).get(run) == first and len(calls) == 2
    # another tftrace version: computed again
    stored = json.loads(cached.read_text())
    stored["key"]["tftrace"] = "0.0.0"
    cached.write_text(json.dumps(stored))
    DashboardCache(counting).get(run)
    assert len(calls) == 3 and json.loads(cached.read_text())["key"] == fingerprint(run)


def test_a_run_that_cannot_hold_the_cache_is_analysed_in_memory(tmp_path: Path) -> None:
    run = shutil.copytree(SAMPLE_TRACES / "tf-2.21", tmp_path / "run")
    (run / "tftrace").write_text("a file where the cache folder would go")  # any user
    cache = DashboardCache()
    assert cache.get(run)["headline"] and cache.get(run) is cache.get(run)
    assert (run / "tftrace").read_text().startswith("a file")


def test_static_files_are_served_and_nothing_else(client: Client) -> None:
    index = client.get(f"{ROUTE}/index.js")
    assert index.status_code == 200 and index.mimetype == "text/javascript"
    assert "export async function render" in index.get_data(as_text=True)
    # every module a module imports is served (relative to the importer, as the browser asks)
    sources = {"index.js": index.get_data(as_text=True)}
    sources |= {p.name: p.read_text() for p in STATIC.glob("*.js")}
    for name, text in sources.items():
        base = "" if name == "index.js" else "static/"
        for imported in re.findall(r'from "\./([^"]+)"', text):
            response = client.get(f"{ROUTE}/{base}{imported}")
            assert response.status_code == 200, (name, imported)
    assert client.get(f"{ROUTE}/static/style.css").mimetype == "text/css"
    for path in ("/static/../plugin.py", "/static/plugin.py", "/static/nothing.js", "/static/"):
        assert client.get(f"{ROUTE}{path}").status_code == 404, path


def test_no_network_in_the_page() -> None:
    """No CDN, no absolute URL: everything the page loads comes from the plugin itself."""
    for path in STATIC.iterdir():
        text = path.read_text()
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), path.name
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text, path.name


def test_listing_and_activity(tmp_path: Path, logdir: Path) -> None:
    metadata_ = plugin_for(logdir).frontend_metadata()
    assert metadata_.es_module_path == "/index.js" and metadata_.tab_name == TAB_NAME
    assert plugin_for(logdir).is_active()
    (tmp_path / "empty").mkdir()
    assert not plugin_for(tmp_path / "empty").is_active()
    listing = json.loads(
        Client(TensorBoardWSGI([plugin_for(logdir)])).get("/data/plugins_listing").get_data()
    )
    assert listing[PLUGIN_NAME]["enabled"] and listing[PLUGIN_NAME]["tab_name"] == TAB_NAME


def test_installed_as_a_tensorboard_plugin(tmp_path: Path) -> None:
    """TensorBoard started anywhere (``tensorboard --logdir DIR``) loads the plugin through
    its entry point. In a fresh process away from the source tree, as TensorBoard runs: a
    build's leftover ``*.egg-info`` in the working directory would hide the installed one."""
    code = (
        "from tensorboard import default; "
        "print(*[f'{p.__module__}:{p.__name__}' for p in default.get_dynamic_plugins()])"
    )
    env = quiet_env()
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "tftrace.analysis.tensorboard_plugin.plugin:ThreadPoolsPlugin" in done.stdout.split()


def test_loading_the_plugin_is_light() -> None:
    """TensorBoard imports every plugin at start-up: pandas comes only with a request."""
    loaded = modules_loaded_by("tftrace.analysis.tensorboard_plugin.plugin")
    assert not {"pandas", "tensorflow", "matplotlib"} & loaded
