"""The Thread pools tab as a user sees it: a real ``tensorboard --logdir`` server (the plugin
comes through its entry point) and headless Chromium, on the sample runs and on one whose
names from the trace, the manifest and its directory are crafted to inject HTML."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from browser import CHROMIUM, HEADLESS_FLAGS, Dom
from conftest import SAMPLE_TRACES, free_port, http_get, quiet_env
from tftrace.analysis.analyze import analyze
from tftrace.analysis.model.run import load
from tftrace.analysis.render import census_text
from tftrace.analysis.tensorboard_plugin import PLUGIN_NAME, TAB_NAME
from tftrace.analysis.xplane.schema import XSpace

pytestmark = [
    pytest.mark.slow,
    pytest.mark.side_by_side,  # times nothing
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium not installed (make browser installs Debian's package)"
    ),
]
EVIL_SCRIPT = "<script>alert(1)</script>"
EVIL_IMG = "<img src=x onerror=alert(1)>"  # a directory name: no '/'
SECTIONS = [
    "Core use",
    "Findings",
    "Pools",
    "Concurrency over time",
    "Queue delay",
    "Steps",
    "Where the wall time went",
    "Threads",
    "Run",
]
DUMP = ("--virtual-time-budget=30000", "--dump-dom")  # the DOM once the page's scripts ran
CHARTS = ["concurrency", "queue-delay", "step-time", "step-breakdown", "step-concurrency"]


def make_evil(run: Path) -> None:
    """Names under the user's control, in every file they come from: the steps' annotation in
    the trace, a Python thread's name in the identity file, the run's name in the manifest."""
    (xplane,) = run.glob("plugins/profile/*/*.xplane.pb")
    space = XSpace()
    space.ParseFromString(xplane.read_bytes())
    renamed = 0
    for plane in space.planes:
        for meta in plane.event_metadata.values():
            if meta.name == "two_chains":
                meta.name = EVIL_SCRIPT
                renamed += 1
    assert renamed
    xplane.write_bytes(space.SerializeToString())
    identity = json.loads((run / "thread_identity.json").read_text())
    helper = [t for t in identity["threads"] if t["python_name"] == "tftrace-identity"]
    helper[0]["python_name"] = f"helper {EVIL_SCRIPT}"
    (run / "thread_identity.json").write_text(json.dumps(identity))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["name"] = EVIL_SCRIPT
    (run / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tb-tab") / "logs"
    shutil.copytree(SAMPLE_TRACES / "tf-2.18", root / "a")
    shutil.copytree(SAMPLE_TRACES / "tf-2.21", root / "b")
    make_evil(shutil.copytree(SAMPLE_TRACES / "tf-2.21", root / EVIL_IMG))
    return root


def local(port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port)]


@pytest.fixture(scope="module")
def server(logdir: Path) -> Iterator[str]:
    """Plain ``tensorboard --logdir`` on 127.0.0.1; its URL once the tab is listed."""
    port = free_port()
    env = quiet_env()
    env.pop("PYTHONPATH", None)
    process = subprocess.Popen(
        [Path(sys.executable).with_name("tensorboard"), "--logdir", logdir, *local(port)],
        cwd=logdir,  # away from the source tree, as a user starts it
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        listing: dict[str, Any] = {}
        while time.monotonic() < deadline and not listing.get(PLUGIN_NAME, {}).get("enabled"):
            try:
                listing = json.loads(http_get(f"{url}data/plugins_listing", timeout=10))
            except OSError:
                time.sleep(0.5)
        assert listing[PLUGIN_NAME]["tab_name"] == TAB_NAME, listing
        for run in ("a", "b", EVIL_IMG):  # analysed before the browser asks (each once)
            http_get(f"{url}data/plugin/{PLUGIN_NAME}/run?run={quote(run)}", timeout=120)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def page(url: str, profile: Path) -> Dom:
    """The DOM of ``url`` once its scripts ran, as headless Chromium dumps it."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, *HEADLESS_FLAGS, f"--user-data-dir={profile}", *DUMP, url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "<body" in done.stdout, done.stderr[-2000:]
    return Dom(done.stdout)


def tab(server: str, fragment: str, profile: Path) -> Dom:
    """The tab's own page: the iframe TensorBoard opens for the plugin."""
    dom = page(f"{server}data/plugin_entry.html?name={PLUGIN_NAME}#{fragment}", profile)
    assert ("body", {"data-ready": "true"}) in dom.tags, "the page did not finish"
    return dom


def test_tensorboard_shows_the_tab(server: str, tmp_path: Path) -> None:
    dom = page(f"{server}#{PLUGIN_NAME}", tmp_path / "profile")
    frames = [a.get("src") for t, a in dom.tags if t == "iframe"]
    assert f"data/plugin_entry.html?name={PLUGIN_NAME}" in frames
    assert TAB_NAME in "".join(dom.text)


def test_the_tab_shows_a_runs_tables_figures_and_findings(server: str, tmp_path: Path) -> None:
    dom = tab(server, "run=b", tmp_path / "profile")
    analysis = analyze(load(SAMPLE_TRACES / "tf-2.21"))
    assert dom.h2 == SECTIONS
    text = "".join(dom.text)
    assert analysis.findings and dom.having("data-finding") == [f.id for f in analysis.findings]
    for finding in analysis.findings:
        assert finding.message in text and (finding.action or "") in text
    assert set(dom.having("data-verification")) <= {"not verified", "nothing to verify"}
    assert dom.having("data-chart") == CHARTS
    assert len([t for t, _ in dom.tags if t == "polyline"]) >= 4 + 1 + 4  # pools, step, pools
    assert len([t for t, a in dom.tags if t == "rect" and "data-series" in a]) > 10
    assert f"kept {analysis.core_use.mean_busy:.2f} of 2 usable cores busy" in text
    for pool in ("inter-op", "intra-op", "tf.data", "python-main"):
        assert pool in dom.cells
    for name in ("tf_Compute", "tf_numa_-1_Eigen", "MainThread"):
        assert name in dom.cells  # the threads table
    assert analysis.census is not None and census_text.title(analysis) in text
    options = [a.get("value") for t, a in dom.tags if t == "option"]
    runs = sorted(["a", "b", EVIL_IMG])  # in name order, as TensorBoard lists runs
    assert options == [*runs, "", *runs]


def test_the_tab_compares_two_runs(server: str, tmp_path: Path) -> None:
    dom = tab(server, "run=a&compare=b", tmp_path / "profile")
    assert dom.h2 == ["Compare: a -> b", *SECTIONS]
    verdicts = dom.having("data-verdict")
    assert verdicts == ["too few steps"]  # 3 steady steps each: the diff's own verdict
    assert "mean concurrency" in dom.cells and "version tensorflow-cpu" in dom.cells


def test_names_from_the_trace_are_text_not_markup(server: str, tmp_path: Path) -> None:
    dom = tab(server, f"run={quote(EVIL_IMG)}", tmp_path / "profile")
    text = "".join(dom.text)
    assert f"helper {EVIL_SCRIPT}" in dom.cells  # the thread's Python name
    assert f"annotation {EVIL_SCRIPT}" in text or f"tf.function {EVIL_SCRIPT}" in text
    assert f"{EVIL_SCRIPT} ({EVIL_IMG})" in text  # the run picker: its name and directory
    # nothing injected: the one script is TensorBoard's loader, no image, no event handler
    scripts = [a for t, a in dom.tags if t == "script"]
    assert scripts == [{"type": "module"}]
    assert not [t for t, _ in dom.tags if t in ("img", "iframe", "object", "embed")]
    assert not [name for _, a in dom.tags for name in a if name.startswith("on")]
