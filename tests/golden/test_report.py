"""``tftrace report``: plot data against known values, the page on the sample runs, and the page
as a real browser renders it, including trace names crafted to inject HTML."""

from __future__ import annotations

import base64
import dataclasses
import enum
import io
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from browser import CHROMIUM, HEADLESS_FLAGS, Dom
from builders import MS, hand_built_run
from conftest import SAMPLE_RUN, SAMPLE_TRACES, modules_loaded_by, quiet_env, tftrace
from tftrace.analysis.analyze import analyze
from tftrace.analysis.metrics import figures as plot_data
from tftrace.analysis.metrics import timeline as timeline_data
from tftrace.analysis.metrics.breakdown import CATEGORIES
from tftrace.analysis.metrics.busy import busy_intervals
from tftrace.analysis.metrics.concurrency import concurrency_series, pool_concurrency
from tftrace.analysis.metrics.intervals import clip, union
from tftrace.analysis.metrics.queue_delay import queue_delay_stats
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run, load
from tftrace.analysis.render.html import FIGURES, SECTIONS
from tftrace.tracer.manifest_reader import Manifest

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EVIL_SCRIPT = "<script>alert(1)</script>"
EVIL_IMG = '"><img src=x onerror=alert(1)>'
POOLS = [Pool.INTER_OP, Pool.INTRA_OP, Pool.TF_DATA, Pool.PYTHON_MAIN]


@pytest.fixture(scope="module")
def sample21() -> Run:
    return load(SAMPLE_RUN)


# --- plot data ------------------------------------------------------------------------------


def test_stack_is_concurrency_series_per_pool(sample21: Run):
    window = analyze(sample21).window
    stack = plot_data.concurrency_stack(
        [pool_concurrency(sample21, p, window) for p in POOLS], bins=50
    )
    resolution = -(-(window[1] - window[0]) // 50)
    for pool in POOLS:
        series = concurrency_series(sample21, pool, resolution, window)
        assert np.array_equal(stack[pool.value].to_numpy()[:-1], series["busy_threads"])
        assert np.array_equal(stack["t_ns"].to_numpy()[:-1], series["t_ns"])
    # the closing row: at the window's end, repeating the last bin
    assert stack["t_ns"].iloc[-1] == window[1] and stack["t_s"].iloc[0] == 0
    assert stack.iloc[-1][POOLS[0].value] == stack.iloc[-2][POOLS[0].value]


def test_stack_by_hand():
    stack = plot_data.concurrency_stack(
        [pool_concurrency(hand_built_run(), Pool.INTRA_OP, (0, 100 * MS))], bins=4
    )
    assert stack["intra-op"].tolist() == [0.0, 30 / 25, 0.0, 0.0, 0.0]
    assert stack["t_s"].tolist() == [0.0, 0.025, 0.05, 0.075, 0.1]


@pytest.mark.parametrize("version", ["tf-2.21", "tf-2.16"])
def test_histogram_fractions_sum_to_one(version: str):
    run = load(SAMPLE_TRACES / version)
    window = analyze(run).window
    hist = plot_data.concurrency_histograms([pool_concurrency(run, p, window) for p in POOLS])
    assert hist.groupby("pool")["fraction"].sum().to_numpy() == pytest.approx(1.0)
    for pool in POOLS:
        levels = pool_concurrency(run, pool, window).level_ns
        assert hist.loc[hist["pool"] == pool.value, "ns"].tolist() == list(levels)


def test_histograms_by_hand():
    hist = plot_data.concurrency_histograms(
        [pool_concurrency(hand_built_run(), Pool.INTRA_OP, (0, 100 * MS))]
    )
    assert hist["fraction"].tolist() == [0.8, 0.1, 0.1]  # 2 busy 40-50, 1 busy 30-40


def test_timeline_by_hand():
    timeline = timeline_data.thread_timeline(hand_built_run(), (0, 100 * MS))
    got = [
        (r.row, r.label, r.start_ns // MS, r.end_ns // MS) for r in timeline.itertuples(index=False)
    ]
    assert got == [
        (0, "python-main: line0 (tid 100)", 10, 20),  # eager dispatch; the annotation is not busy
        (1, "inter-op: line1 (tid 101)", 20, 60),
        (2, "intra-op: line2 (tid 102)", 30, 50),
        (3, "intra-op: line3 (tid 103)", 40, 50),
    ]
    assert timeline["width_s"].tolist() == [0.01, 0.04, 0.02, 0.01]


def test_timeline_is_the_busy_intervals(sample21: Run):
    window = analyze(sample21).window
    timeline = timeline_data.thread_timeline(sample21, window)
    expected = {}
    for thread, (start, end) in busy_intervals(sample21, sample21.threads["thread"]).items():
        s, e = union(*clip(start, end, *window))
        if len(s):
            expected[thread] = (s.tolist(), e.tolist())
    got = {
        int(t): (g["start_ns"].tolist(), g["end_ns"].tolist())
        for t, g in timeline.groupby("thread")
    }
    assert got == expected
    assert timeline.groupby("thread")["row"].nunique().eq(1).all()
    assert timeline["label"].str.startswith(tuple(p.value for p in Pool)).all()
    # main thread first, then inter-op, intra-op, tf.data
    order = timeline.drop_duplicates("row")["pool"].tolist()
    assert order[:4] == ["python-main", "inter-op", "inter-op", "intra-op"]


def test_timeline_closes_sub_pixel_gaps(sample21: Run):
    window = analyze(sample21).window
    full = timeline_data.thread_timeline(sample21, window)
    coarse = timeline_data.thread_timeline(sample21, window, min_gap_ns=1_000_000)
    assert len(coarse) < len(full)
    for thread, g in coarse.groupby("thread"):
        f = full[full["thread"] == thread]
        assert (g["start_ns"].min(), g["end_ns"].max()) == (f["start_ns"].min(), f["end_ns"].max())
        gaps = g["start_ns"].to_numpy()[1:] - g["end_ns"].to_numpy()[:-1]
        assert (gaps >= 1_000_000).all()


def test_queue_delay_distribution_by_hand():
    run = hand_built_run()
    dist = plot_data.queue_delay_distribution(run, [Pool.INTRA_OP])
    stats = queue_delay_stats(run).set_index("pool")
    assert dist["closures"].sum() == stats.loc["intra-op", "closures"] == 2
    assert dist["fraction"].sum() == pytest.approx(1.0)
    # one closure started as it was scheduled (0 ns: the [0, 1 ns) bin, drawn from 0.1 ns),
    # the other waited 10 ms
    assert dist.iloc[0]["lo_us"] == pytest.approx(1e-4) and dist.iloc[0]["closures"] == 1
    last = dist.iloc[-1]
    assert last["closures"] == 1 and last["lo_us"] <= 10_000 < last["lo_us"] + last["width_us"]
    assert (dist["lo_us"] > 0).all()


def test_queue_delay_distribution_sample(sample21: Run):
    dist = plot_data.queue_delay_distribution(sample21, [Pool.INTRA_OP, Pool.INTER_OP])
    stats = queue_delay_stats(sample21).set_index("pool")
    for pool, group in dist.groupby("pool"):
        assert group["closures"].sum() == stats.loc[pool, "closures"]
        assert group["closures"].iloc[0] > 0 and group["closures"].iloc[-1] > 0  # trimmed


def test_breakdown_bars(sample21: Run):
    analysis = analyze(sample21)
    bars = plot_data.breakdown_bars(analysis.breakdown, analysis.steps, analysis.window)
    assert bars["bar"].nunique() == 1 + len(analysis.steps.table)
    window_bar = bars[bars["bar"] == 0]
    assert window_bar["category"].tolist() == list(CATEGORIES)
    assert window_bar["share"].tolist() == analysis.breakdown["share"].tolist()
    ends = (bars["left"] + bars["share"]).groupby(bars["bar"]).max()
    assert ends.to_numpy() == pytest.approx(1.0)
    assert bars.groupby("bar")["label"].first().str.contains(r"\(\d+\.\d ms\)").all()
    few = plot_data.breakdown_bars(analysis.breakdown, analysis.steps, analysis.window, 2)
    assert few["bar"].nunique() == 3


def test_plot_data_of_an_empty_trace(sample21: Run):
    from tftrace.analysis.model.schema import EVENTS, REGIONS, empty

    run = dataclasses.replace(sample21, events=empty(EVENTS), regions=empty(REGIONS))
    data = analyze(run)
    assert data.concurrency_over_time.empty and data.thread_timeline.empty
    assert data.queue_delay_distribution.empty


def test_plot_data_and_page_do_not_load_matplotlib():
    loaded = modules_loaded_by(
        "tftrace.cli", "tftrace.analysis.metrics.figures", "tftrace.analysis.render.html"
    )
    assert "matplotlib" not in loaded


# --- the command on the sample runs -----------------------------------------------------------


def check_page(page: str) -> None:
    """Offline (no URL), every section, every figure embedded."""
    assert "http://" not in page and "https://" not in page
    for _, title in SECTIONS:
        assert f"<h2>{title}</h2>" in page
    for name, _, _ in FIGURES:
        assert f'id="figure-{name}"' in page
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
    assert page.count("<img ") == len(FIGURES)  # no other image, no other source


@pytest.mark.parametrize("version", ["tf-2.21", "tf-2.16"])
def test_report_command(tmp_path: Path, version: str):
    proc = tftrace("report", SAMPLE_TRACES / version, "-o", tmp_path / "out" / "r.html")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "out" / "r.html").read_text()
    check_page(page)
    for pool in ("inter-op", "intra-op", "tf.data", "python-main"):
        assert f"<td>{pool}</td>" in page
    for name, _, _ in FIGURES:
        png = (tmp_path / "out" / "r_files" / f"{name}.png").read_bytes()
        assert png.startswith(PNG_MAGIC) and b"http" not in png  # no Software tag with a URL
    assert ("No closure has both its Record" in page) == (version == "tf-2.16")


def test_report_default_output_is_in_the_run(sample_run_copy: Path):
    run = sample_run_copy
    proc = tftrace("report", run)
    assert proc.returncode == 0, proc.stderr
    assert (run / "report.html").is_file()
    assert sorted(p.name for p in (run / "report_files").iterdir()) == sorted(
        f"{name}.png" for name, _, _ in FIGURES
    )
    assert str(run / "report.html") in proc.stdout


def test_report_of_a_bare_trace(tmp_path: Path):
    (xplane,) = SAMPLE_RUN.glob("plugins/profile/*/*.xplane.pb")
    shutil.copy(xplane, tmp_path / "host.xplane.pb")
    proc = tftrace("report", tmp_path / "host.xplane.pb", "-o", tmp_path)  # a directory
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "report.html").read_text()
    check_page(page)
    assert "a bare trace has none" in page and "No OS samples" in page
    # The sample was recorded with oneDNN on (its MatMul ran as _MklMatMul).
    assert "<th>oneDNN</th><td>on (inferred from op names: _MklMatMul)</td>" in page


def test_report_bad_input_and_unwritable_output(tmp_path: Path):
    proc = tftrace("report", tmp_path / "nothing", env=quiet_env())
    assert proc.returncode == 2 and "no such file" in proc.stderr
    (tmp_path / "file").write_text("")
    proc = tftrace("report", SAMPLE_TRACES / "tf-2.16", "-o", tmp_path / "file" / "r.html")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cannot write" in proc.stderr


# --- hostile names, and the page in a browser -------------------------------------------------


class Severity(enum.Enum):
    HIGH = "high"


@dataclasses.dataclass(frozen=True)
class FakeFinding:
    id: str
    severity: Severity
    pool: str | None
    message: str
    action: str
    evidence: dict[str, Any]


def evil_run(run: Run) -> Run:
    """The sample run with trace names, path, command line and notes turned into HTML."""
    events = run.events.copy()
    assert "two_chains" in events["name"].cat.categories  # the steps' annotation
    assert "MatMul" in events["op_type"].cat.categories  # the top op type
    events["name"] = events["name"].cat.rename_categories({"two_chains": EVIL_SCRIPT})
    events["op_type"] = events["op_type"].cat.rename_categories({"MatMul": EVIL_IMG})
    threads = run.threads.copy()
    threads["tf_name"] = threads["tf_name"].cat.rename_categories({"tf_Compute": "tf_$Compute"})
    threads["python_name"] = threads["python_name"].cat.rename_categories(
        {"MainThread": "Main$Thread " + EVIL_SCRIPT}
    )
    manifest = run.manifest.to_json()
    manifest["workload_command"] = ["python", f"{EVIL_SCRIPT}.py", EVIL_IMG]
    manifest["name"] = EVIL_IMG
    return dataclasses.replace(
        run,
        path=Path(f"/runs/{EVIL_IMG}"),
        manifest=Manifest.from_json(manifest),
        events=events,
        threads=threads,
        missing=[f"py-spy: none ({EVIL_SCRIPT})"],
    )


EVIL_FINDINGS = [
    FakeFinding("x<b>", Severity.HIGH, EVIL_IMG, EVIL_SCRIPT, EVIL_IMG, {EVIL_IMG: EVIL_SCRIPT}),
]


@pytest.fixture(scope="module")
def evil_page(tmp_path_factory: pytest.TempPathFactory, sample21: Run) -> Path:
    from tftrace.commands.report import write_report

    analysis = analyze(evil_run(sample21))
    assert analysis.steps.source == f"annotation {EVIL_SCRIPT}"
    assert analysis.top_ops["op_type"].iloc[0] == EVIL_IMG
    out = tmp_path_factory.mktemp("evil")
    evil = dataclasses.replace(analysis, findings=tuple(EVIL_FINDINGS))
    files = write_report(evil, out / "report.html", out / "report_files")
    return files.page


def test_hostile_names_are_escaped_in_the_source(evil_page: Path):
    page = evil_page.read_text()
    check_page(page)
    assert "<script" not in page.lower() and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in page


def chromium(*args: str | Path, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        *HEADLESS_FLAGS,
        f"--user-data-dir={profile}",
        *map(str, args),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (make browser installs Debian's package)"
)


@needs_chromium
def test_browser_dom(evil_page: Path, tmp_path: Path):
    proc = chromium("--dump-dom", evil_page.as_uri(), profile=tmp_path / "profile")
    assert proc.returncode == 0 and "<body" in proc.stdout, proc.stderr[-2000:]
    dom = Dom(proc.stdout)
    assert dom.h2 == [title for _, title in SECTIONS]
    for pool in ("inter-op", "intra-op", "tf.data", "python-main"):
        assert pool in dom.cells
    assert EVIL_IMG in dom.cells  # the top op type, as text in its cell
    text = "".join(dom.text)
    assert EVIL_SCRIPT in text and text.count(EVIL_IMG) >= 4
    # nothing injected: no script, no image but ours, no event handler anywhere
    assert not [t for t, _ in dom.tags if t in ("script", "iframe", "object", "embed")]
    assert not [a for _, attrs in dom.tags for a in attrs if a.startswith("on")]
    images = [attrs for tag, attrs in dom.tags if tag == "img"]
    assert len(images) == len(FIGURES)
    for attrs in images:
        src = attrs["src"] or ""
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1], validate=True).startswith(PNG_MAGIC)


@needs_chromium
def test_browser_screenshot(evil_page: Path, tmp_path: Path):
    from PIL import Image

    shot = tmp_path / "page.png"
    proc = chromium(
        f"--screenshot={shot}",
        "--window-size=1200,6000",
        "--hide-scrollbars",
        evil_page.as_uri(),
        profile=tmp_path / "profile",
    )
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"))
    assert pixels.shape[:2] == (6000, 1200)
    ink = (pixels < 200).any(axis=2)
    assert ink.mean() > 0.02  # text and tables, not a blank page
    # The figures were decoded and drawn: the histogram's inter-op bars and the breakdown's
    # "intra-op parallel" segments have their exact colours somewhere in the page.
    for colour in ((0x1F, 0x77, 0xB4), (0x2C, 0xA0, 0x2C)):
        assert (pixels == colour).all(axis=2).sum() > 2000, colour
    # and they are below the tables: the top third holds no figure colour block
    top = pixels[:2000]
    assert (top == (0x2C, 0xA0, 0x2C)).all(axis=2).sum() < 100


def test_findings_are_rendered_in_order(sample21: Run):
    from tftrace.analysis.render.html import render_page

    analysis = analyze(sample21)
    findings = [
        FakeFinding("first", Severity.HIGH, None, "m1", "a1", {}),
        FakeFinding("second", Severity.HIGH, "intra-op", "m2", "a2", {"k": 0.123456}),
    ]
    page = render_page(dataclasses.replace(analysis, findings=tuple(findings)), {})
    assert page.index("m1") < page.index("m2") < page.index("<h2>Pools</h2>")
    assert 'class="finding sev-high"' in page and "0.1235" in page
    assert "no findings" in render_page(dataclasses.replace(analysis, findings=()), {})
    assert "Not drawn:" in render_page(dataclasses.replace(analysis, findings=()), {})


def test_report_shows_the_runs_findings(tmp_path: Path):
    import html

    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.findings import diagnose
    from tftrace.analysis.model.run import load

    # The whole trace: the sample's steady steps are a few ms, too short to find anything in.
    run = load(SAMPLE_RUN)
    findings = diagnose(run, analyze(run, window="all"))
    assert findings  # the sample run is Python-bound
    proc = tftrace("report", SAMPLE_RUN, "--window", "all", "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "r.html").read_text()
    for finding in findings:
        assert html.escape(finding.message) in page


def test_command_module_imports_nothing_heavy():
    # The CLI imports every command module at start-up: heavy imports stay inside run().
    assert "pandas" not in modules_loaded_by("tftrace.commands.report")


def test_report_plot_data_of_a_sample(sample21: Run):
    # the whole trace: the tf.data pipeline's closures run before the steady steps
    data = analyze(sample21, window="all")
    assert isinstance(data.thread_timeline, pd.DataFrame) and data.run.manifest.usable_cpus == 2
    assert list(data.concurrency_over_time.columns) == ["t_ns", "t_s", *(p.value for p in POOLS)]
    assert set(data.queue_delay_distribution["pool"]) == {"intra-op", "inter-op", "tf.data"}
