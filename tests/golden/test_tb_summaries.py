"""TensorBoard summaries of a sample run, read back with TensorBoard's own event reader."""

from __future__ import annotations

import json
import queue
import shutil
import signal
import struct
import subprocess
import threading
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import SAMPLE_RUN, free_port, http_get, quiet_env, tftrace, tftrace_command
from tftrace.analysis.analyze import Analysis, analyze
from tftrace.analysis.findings import Finding, Severity
from tftrace.analysis.metrics.concurrency import ANALYSED_POOLS, concurrency_series
from tftrace.analysis.model.run import load
from tftrace.analysis.render.formatting import markdown_text
from tftrace.analysis.render.tensorboard import (
    MS,
    SUBDIR,
    png_size,
    series_resolution_ns,
    write_summaries,
)

FLOAT32 = {"rel": 1e-6, "abs": 1e-6}


FINDING = Finding(
    "inter-op-idle", Severity.LOW, "inter-op", "2 threads, 0.2 busy on average", "set it to 1"
)


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    """A valid grey PNG built by hand (no plotting library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + bytes(range(width)) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def read_back(directory: Path) -> Any:
    """Every point of every tag, as TensorBoard's plugins read them (no downsampling)."""
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea

    accumulator = pea.EventAccumulator(str(directory), size_guidance={pea.TENSORS: 0})
    accumulator.Reload()
    return accumulator


def values(accumulator: Any, tag: str) -> list[Any]:
    from tensorboard.util import tensor_util

    return [tensor_util.make_ndarray(e.tensor_proto) for e in accumulator.Tensors(tag)]


def plugin_of(accumulator: Any, tag: str) -> str:
    return str(accumulator.SummaryMetadata(tag).plugin_data.plugin_name)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, Any]:
    run_dir = tmp_path_factory.mktemp("tb") / "run"
    shutil.copytree(SAMPLE_RUN, run_dir)
    analysis = analyze(load(run_dir))
    diagnosed = replace(analysis, findings=(FINDING,))
    directory = write_summaries(diagnosed, images={"queue delay": tiny_png()})
    assert directory == run_dir / SUBDIR
    return analysis, read_back(directory)


def test_concurrency_scalars_are_the_series_per_pool(written: tuple[Analysis, Any]) -> None:
    analysis, acc = written
    resolution = series_resolution_ns(analysis.window)
    assert resolution == MS  # a 0.45 s window: 1 ms bins
    for pool in ANALYSED_POOLS:
        tag = f"concurrency/{pool.value}"
        series = concurrency_series(analysis.run, pool, resolution, analysis.window)
        events = acc.Tensors(tag)
        assert plugin_of(acc, tag) == "scalars"
        assert [e.step for e in events] == [int(t) // MS for t in series["t_ns"]]
        assert [float(v) for v in values(acc, tag)] == pytest.approx(
            series["busy_threads"].tolist(), **FLOAT32
        )
        walls = [(analysis.run.origin.wall_ns + int(t)) / 1e9 for t in series["t_ns"]]
        assert [e.wall_time for e in events] == pytest.approx(walls, abs=1e-6)


def test_whole_window_figures_are_text_not_single_points(written: tuple[Analysis, Any]) -> None:
    analysis, acc = written
    tags = acc.Tags()["tensors"]
    assert not [t for t in tags if t.startswith(("pool/", "queue_delay/", "breakdown/"))]
    (text,) = values(acc, "figures")
    assert plugin_of(acc, "figures") == "text"
    markdown = text.item().decode()
    for r in analysis.pools.to_dict("records"):
        assert f"| {r['pool']} | {r['threads']} |" in markdown
        assert f"| {r['mean']:.2f} | {r['peak']} |" in markdown
    for r in analysis.queue_delay.to_dict("records"):
        assert f"| {r['pool']} | {r['closures']} | {r['p50_us']:.1f} |" in markdown
    for r in analysis.breakdown.to_dict("records"):  # "dispatch &amp; executor": markdown_text
        assert f"| {markdown_text(r['category'])} | {r['share']:.1%} |" in markdown


def test_pool_concurrency_per_step(written: tuple[Analysis, Any]) -> None:
    """steps/concurrency/<pool>: the pool's busy thread-time inside the step / its duration,
    checked against the concurrency step function integrated by hand."""
    analysis, acc = written
    table = analysis.steps.table
    for pool in ANALYSED_POOLS:
        tag = f"steps/concurrency/{pool.value}"
        f = analysis.concurrency[pool].function
        expected = []
        for start, end in zip(table["start_ns"], table["end_ns"], strict=True):
            lo, hi = max(int(start), analysis.window[0]), min(int(end), analysis.window[1])
            widths = np.diff(np.clip(f.times, lo, hi))
            expected.append(float((widths * f.values).sum()) / (hi - lo))
        assert [e.step for e in acc.Tensors(tag)] == table["step"].tolist(), tag
        assert [float(v) for v in values(acc, tag)] == pytest.approx(expected, **FLOAT32), tag
        assert plugin_of(acc, tag) == "scalars"
        # the same figures in `analyze --json`, one record per step
        records = analysis.to_json()["step_concurrency"]
        assert [r["step"] for r in records] == table["step"].tolist()
        assert [r[pool.value] for r in records] == pytest.approx(expected), tag
    # the steps lie inside the window (gaps between them aside): their busy time is part of
    # the pool's, and no step has more threads busy on average than the peak
    inter = analysis.concurrency[ANALYSED_POOLS[0]]
    per_step = np.array([float(v) for v in values(acc, "steps/concurrency/inter-op")])
    busy = (per_step * table["duration_ns"].to_numpy(dtype=float)).sum()
    assert 0.5 * inter.busy_thread_ns < busy <= inter.busy_thread_ns * (1 + 1e-6)
    assert per_step.max() <= inter.peak


def test_step_scalars(written: tuple[Analysis, Any]) -> None:
    analysis, acc = written
    table = analysis.steps.table
    assert [e.step for e in acc.Tensors("steps/duration_ms")] == table["step"].tolist()
    assert [float(v) for v in values(acc, "steps/duration_ms")] == pytest.approx(
        (table["duration_ns"] / 1e6).tolist(), **FLOAT32
    )
    assert [float(v) for v in values(acc, "steps/breakdown/idle")] == pytest.approx(
        table["idle"].tolist(), **FLOAT32
    )


def test_a_given_png_comes_back_as_an_image(written: tuple[Analysis, Any]) -> None:
    _, acc = written
    (image,) = values(acc, "plots/queue_delay")
    assert plugin_of(acc, "plots/queue_delay") == "images"
    assert list(image) == [b"3", b"2", tiny_png()]


def test_a_given_finding_comes_back_as_text(written: tuple[Analysis, Any]) -> None:
    _, acc = written
    (text,) = values(acc, "findings")
    assert plugin_of(acc, "findings") == "text"
    markdown = text.item().decode()
    for part in ("**low**", "`inter-op-idle`", "(inter-op)", FINDING.message, "set it to 1"):
        assert part in markdown


def test_rewriting_replaces_the_points(sample_run_copy: Path) -> None:
    run_dir = sample_run_copy
    analysis = analyze(load(run_dir))
    write_summaries(replace(analysis, findings=(FINDING,)), images={"a": tiny_png()})
    directory = write_summaries(replace(analysis, findings=()))
    assert len(list(directory.glob("events.out.tfevents.*"))) == 1
    acc = read_back(directory)
    tags = acc.Tags()["tensors"]
    assert not [t for t in tags if t.startswith("plots/")]
    (text,) = values(acc, "findings")
    assert FINDING.message not in text.item().decode()
    series = concurrency_series(
        analysis.run, ANALYSED_POOLS[0], series_resolution_ns(analysis.window), analysis.window
    )
    assert len(acc.Tensors(f"concurrency/{ANALYSED_POOLS[0].value}")) == len(series)
    assert len(acc.Tensors("steps/concurrency/inter-op")) == len(analysis.steps.table)


def test_no_findings_says_so() -> None:
    from tftrace.analysis.render.tensorboard import render_findings

    assert render_findings([]) == "No findings."


def test_png_size_rejects_other_bytes() -> None:
    assert png_size(tiny_png(7, 5)) == (7, 5)
    with pytest.raises(ValueError, match="not a PNG"):
        png_size(b"GIF89a" + bytes(30))


def test_cli_no_serve_writes_the_summaries(sample_run_copy: Path) -> None:
    run_dir = sample_run_copy
    done = tftrace("tensorboard", run_dir, "--no-serve", timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((run_dir / SUBDIR).glob("events.out.tfevents.*"))


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    done = tftrace("tensorboard", tmp_path / "nothing", "--no-serve", timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such file" in done.stderr


# --- end to end: the command serves the run, TensorBoard lists the profile and our scalars ----


def _get_json(url: str) -> Any:
    return json.loads(http_get(url, timeout=10))


def _lines(stream: Any) -> queue.Queue[str]:
    """Lines of a pipe, read in a thread so that waiting for one can time out."""
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _wait_for_url(lines: queue.Queue[str], deadline: float) -> str:
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
        except queue.Empty:
            break
        if line.startswith("TensorBoard: http://"):
            return line.split()[1]
    raise AssertionError("no URL printed")


def _poll(fetch: Any, ready: Any, deadline: float) -> Any:
    """``fetch()`` until ``ready(result)`` or the deadline (TensorBoard loads in the background)."""
    result = None
    while time.monotonic() < deadline:
        try:
            result = fetch()
            if ready(result):
                return result
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"not ready: {result}")


def _stop(server: subprocess.Popen[str]) -> int:
    """Ctrl-C the server; its exit code, or a failure (and a kill) after 20 s."""
    server.send_signal(signal.SIGINT)
    try:
        return server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        raise


@pytest.mark.slow
def test_tensorboard_command_serves_profile_and_scalars(
    sample_run_copy: Path, tmp_path: Path
) -> None:
    run_dir = sample_run_copy
    port = free_port()
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("w") as stderr:
        server = subprocess.Popen(
            tftrace_command("tensorboard", run_dir, "--port", str(port)),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=quiet_env(),
        )
        try:
            deadline = time.monotonic() + 45
            lines = _lines(server.stdout)
            url = _wait_for_url(lines, deadline)
            assert url == f"http://127.0.0.1:{port}/"
            assert lines.get(timeout=10) == f"Thread pools: {url}#tftrace\n"
            listing = _poll(
                lambda: _get_json(f"{url}data/plugins_listing"),
                lambda r: r["scalars"]["enabled"] and r["profile"]["enabled"],
                deadline,
            )
            assert listing["text"]["enabled"]
            assert (
                listing["tftrace"]["enabled"] and listing["tftrace"]["tab_name"] == "Thread pools"
            )
            # the command analysed the run once: the tab reads what it cached
            assert (run_dir / SUBDIR / "plugin.json").exists()
            tab = _get_json(f"{url}data/plugin/tftrace/run?run=.")
            assert tab["name"] == "." and tab["run"] == str(run_dir) and tab["pools"]
            tags = _poll(
                lambda: _get_json(f"{url}data/plugin/scalars/tags"),
                lambda r: "tftrace" in r,
                deadline,
            )
            assert {"concurrency/inter-op", "steps/concurrency/intra-op"} <= set(tags["tftrace"])
            sessions = _get_json(f"{url}data/plugin/profile/runs")
            (session,) = [p.name for p in run_dir.glob("plugins/profile/*")]
            assert any(session in s for s in sessions), sessions
        finally:
            code = _stop(server)
    assert code == 0
    assert "Traceback" not in stderr_path.read_text()


def test_the_about_text_leads_with_the_core_use_headline(written: tuple[Analysis, Any]) -> None:
    analysis, acc = written
    (text,) = values(acc, "about")
    use = analysis.core_use
    assert use is not None and use.cores
    assert f"kept {use.mean_busy:.2f} of {use.cores} usable cores busy" in text.item().decode()


@pytest.mark.slow
def test_tensorboard_stops_on_ctrl_c_even_when_started_with_it_ignored(
    sample_run_copy: Path,
) -> None:
    """A parent that ignores SIGINT passes that on through exec (as a test run had, once): the
    server still stops on Ctrl-C."""
    server = subprocess.Popen(
        tftrace_command("tensorboard", sample_run_copy, "--port", str(free_port())),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=quiet_env(),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        _wait_for_url(_lines(server.stdout), time.monotonic() + 45)
    finally:
        code = _stop(server)
    assert code == 0


def test_many_steps_become_at_most_max_points() -> None:
    """2,500 steps: 1,000 points, each the mean of its run of consecutive steps, at its last."""
    from tftrace.analysis.metrics.figures import STEP_POINTS as MAX_POINTS
    from tftrace.analysis.metrics.figures import step_points
    from tftrace.analysis.metrics.steps import COLUMNS

    n = 2500
    table = pd.DataFrame({c: np.zeros(n) for c in COLUMNS})
    table["step"] = np.arange(1, n + 1)
    table["duration_ns"] = np.arange(1, n + 1) * 1_000_000.0
    points = step_points(table)
    assert len(points) == MAX_POINTS
    assert points["step"].iloc[-1] == n and points["step"].is_monotonic_increasing
    # the first point holds steps 1-3 (2,500 / 1,000 = 2.5 steps a point): mean 2 ms
    assert points["duration_ns"].iloc[0] == pytest.approx(2_000_000.0)
    assert points["duration_ns"].mean() == pytest.approx(table["duration_ns"].mean(), rel=1e-3)
    assert step_points(table.head(10)).equals(table.head(10))


@pytest.mark.parametrize("size", [0, 1, 60, 70_000])
def test_record_framing_is_tensorboards(size: int) -> None:
    import io

    from tensorboard.summary.writer.record_writer import RecordWriter

    from tftrace.analysis.render.tensorboard import _record

    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    buffer = io.BytesIO()
    RecordWriter(buffer).write(data)
    assert _record(data) == buffer.getvalue()
