"""The thread census (``metrics/census.py``, ``metrics/census_pools.py``): hand-built runs
whose figures are known, the sample run against the CPU truth and core-use figures, the
threadpoolctl capture, and the census as each output shows it (user strings escaped)."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from builders import MS, cpu_samples_table, events_table, make_run, threads_table
from conftest import SAMPLE_RUN, WORKLOADS, quiet_env
from tftrace.analysis.analyze import analyze
from tftrace.analysis.metrics.census import series_resolution, thread_census
from tftrace.analysis.metrics.census_pools import (
    BLAS,
    INTER_OP,
    INTRA_OP,
    PYTHON,
    TFTRACE,
    UNKNOWN,
    census_pools,
    last_report,
)
from tftrace.analysis.metrics.figures import census_stack
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool, pool_of_identity
from tftrace.analysis.model.run import Run, load
from tftrace.analysis.render import census_text
from tftrace.analysis.render.formatting import markdown_text
from tftrace.analysis.render.html_sections import census_section
from tftrace.analysis.render.terminal import render_text
from tftrace.tracer.child import thread_libraries
from tftrace.tracer.child.thread_libraries import ThreadLibraries, read_thread_libraries

# Figures checked against each other, never against the clock: it may share the cores.
pytestmark = pytest.mark.side_by_side

POOLS = [
    Pool.PYTHON_MAIN,  # 0: on a CPU the whole window
    Pool.INTER_OP,  # 1: an op 20-60 ms by the trace, little CPU
    Pool.INTRA_OP,  # 2
    Pool.INTRA_OP,  # 3: born at 50 ms with 30 ms of CPU already
    Pool.BLAS_OPENMP,  # 4: half a CPU, no trace line
    Pool.PROFILER,  # 5: tftrace's own Python thread
    Pool.UNMAPPED,  # 6
]
OPENBLAS = {
    "user_api": "blas",
    "internal_api": "openblas",
    "prefix": "libopenblas",
    "num_threads": 2,
    "version": "0.3.27",
    "threading_layer": "pthreads",
    "file": "libopenblas64_p-r0.so",
}
MANIFEST: dict[str, Any] = {
    "host": {"cpu_affinity": [0, 1]},
    "env": {"OMP_NUM_THREADS": "4"},
    "pools": {
        "intra_op": {"size": 2, "source": "env", "env": "2"},
        "inter_op": {"size": 2, "source": "default (schedulable CPUs)", "cpus": 2},
    },
}


def libraries(*snapshots: dict[str, Any]) -> dict[str, Any]:
    return {"snapshots": list(snapshots)}


def report(
    libs: list[dict[str, Any]], env: dict[str, str] | None = None, error: str | None = None
) -> dict[str, Any]:
    return {"when": "end of run", "libraries": libs, "env": env or {}, "error": error}


def census_run(manifest: dict[str, Any] | None = None, sampled: bool = True) -> Run:
    threads = threads_table(POOLS, 100 * MS)
    threads["line_id"] = pd.array([0, 1, 2, 3, None, None, None], dtype="Int64")
    threads["python_name"] = pd.Categorical(
        ["MainThread", None, None, None, None, "tftrace-identity", None]
    )
    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    samples = [
        cpu_samples_table(0, 100, t, t.copy()),  # one CPU, all the time
        cpu_samples_table(1, 101, t, t // 10),  # 0.1 CPU
        cpu_samples_table(3, 103, t[5:], 30 * MS + (t[5:] - t[5])),  # born at 50 ms
        cpu_samples_table(4, 104, t, t // 2),  # half a CPU
    ]
    op = EventKind.OP.value
    events = events_table([(1, "MatMul:MatMul", op, 20 * MS, 60 * MS, None, None)])
    return make_run(
        threads,
        events,
        samples=pd.concat(samples, ignore_index=True) if sampled else None,
        manifest=MANIFEST if manifest is None else manifest,
    )


def row(census: Any, pool: str) -> pd.Series:
    table = census.table.set_index("pool")
    return table.loc[pool]


# --- the figures, by hand ---------------------------------------------------------------------


def test_pools_of_the_census():
    run = census_run()
    assert list(census_pools(run.threads)) == [
        PYTHON,
        INTER_OP,
        INTRA_OP,
        INTRA_OP,
        BLAS,
        TFTRACE,
        UNKNOWN,
    ]


def test_cpu_figures_by_hand():
    run = census_run()
    census = thread_census(run, (0, 100 * MS), libraries=libraries(report([OPENBLAS])))
    assert census.sampled and census.cpus == 2 and census.cpus_basis == "usable CPUs"
    assert row(census, PYTHON)["cpu_s"] == pytest.approx(0.1)
    assert row(census, PYTHON)["on_cpu"] == pytest.approx(1.0)
    assert row(census, INTER_OP)["on_cpu"] == pytest.approx(0.1)
    # born in the window: its counter counts from 0, so its 30 + 50 ms are the window's
    assert row(census, INTRA_OP)["cpu_s"] == pytest.approx(0.08)
    assert row(census, BLAS)["on_cpu"] == pytest.approx(0.5)
    assert row(census, TFTRACE)["cpu_s"] == 0.0  # not sampled, but sampled runs count 0
    assert census.on_cpu == pytest.approx(1.0 + 0.1 + 0.8 + 0.5)
    assert census.threads == 7
    assert census.table["wait_s"].sum() == 0.0


def test_traced_busy_only_where_the_trace_has_lines():
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries())
    assert row(census, INTER_OP)["traced_busy"] == pytest.approx(0.4)  # the op, 40 of 100 ms
    assert row(census, INTRA_OP)["traced_busy"] == 0.0
    assert math.isnan(row(census, BLAS)["traced_busy"])  # no line: the trace cannot say
    assert math.isnan(row(census, TFTRACE)["traced_busy"])


def test_series_per_bin():
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries())
    assert census.resolution_ns == 20 * MS  # a 100 ms window keeps 20 ms bins, 5 of them
    series = census.series
    assert list(series["t_ns"]) == [0, 20 * MS, 40 * MS, 60 * MS, 80 * MS]
    assert list(series["t_s"]) == pytest.approx([0, 0.02, 0.04, 0.06, 0.08])
    assert series[PYTHON].to_numpy() == pytest.approx(np.ones(5))
    assert series[BLAS].to_numpy() == pytest.approx(np.full(5, 0.5))
    # thread 3's 30 ms before its first sample land in the bin that holds it (40-60 ms)
    assert series[INTRA_OP].to_numpy() == pytest.approx([0, 0, 2.0, 1.0, 1.0])
    # the bins add up to the window's figures
    width_s = census.resolution_ns / 1e9
    for pool in census.table["pool"]:
        assert series[pool].sum() * width_s == pytest.approx(row(census, pool)["cpu_s"])
    assert census.peak_on_cpu == pytest.approx(1.0 + 0.1 + 2.0 + 0.5)


def test_a_window_inside_the_samples():
    census = thread_census(census_run(), (25 * MS, 75 * MS), libraries=libraries())
    assert row(census, PYTHON)["cpu_s"] == pytest.approx(0.05)
    assert row(census, BLAS)["on_cpu"] == pytest.approx(0.5)
    assert row(census, INTRA_OP)["cpu_s"] == pytest.approx(0.03 + 0.025)  # born at 50 ms


def test_series_resolution():
    assert series_resolution(100 * MS) == 20 * MS  # never under 20 ms
    assert series_resolution(1000 * MS) == 50 * MS  # 20 bins of a short window
    assert series_resolution(10_000 * MS) == 100 * MS  # 100 ms
    assert series_resolution(100_000 * MS) == 250 * MS  # at most 400 bins


# --- sizes and where they came from ---------------------------------------------------------


def test_tf_pool_sources_from_the_manifest():
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries())
    assert (row(census, INTRA_OP)["size"], row(census, INTRA_OP)["source"]) == (
        2,
        "TF_NUM_INTRAOP_THREADS=2",
    )
    assert row(census, INTER_OP)["source"] == "default: one per schedulable CPU (2)"
    assert row(census, PYTHON)["source"] == "the main thread + 0 threading threads"
    assert row(census, TFTRACE)["source"] == "tftrace's own, in the workload"


def test_blas_size_from_threadpoolctl_and_the_variable():
    taken = report([OPENBLAS], env={"OPENBLAS_NUM_THREADS": "2"})
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries(taken))
    blas = row(census, BLAS)
    assert blas["size"] == 2
    assert blas["source"] == "OPENBLAS_NUM_THREADS=2; openblas 0.3.27: 2 threads (threadpoolctl)"
    assert census.sized_threads == 2 + 2 + 2
    assert census.libraries == (OPENBLAS,)


def test_blas_variable_precedence_falls_back_to_omp():
    # no OPENBLAS_ or GOTO_ variable: OpenBLAS reads OMP_NUM_THREADS (here the manifest's)
    lib = {**OPENBLAS, "num_threads": 4}
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries(report([lib])))
    assert row(census, BLAS)["source"].startswith("OMP_NUM_THREADS=4; openblas 0.3.27: 4 threads")


def test_two_libraries_add_up():
    gomp = {"user_api": "openmp", "internal_api": "openmp", "num_threads": 3, "version": None}
    taken = report([OPENBLAS, gomp], env={"OPENBLAS_NUM_THREADS": "2"})
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries(taken))
    assert row(census, BLAS)["size"] == 5
    assert "; openmp: 3 threads (threadpoolctl)" in row(census, BLAS)["source"]


def test_blas_without_a_report():
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries())
    assert row(census, BLAS)["size"] == 4
    assert row(census, BLAS)["source"] == "OMP_NUM_THREADS=4 (no threadpoolctl report)"
    no_env = census_run({**MANIFEST, "env": {}})
    census = thread_census(no_env, (0, 100 * MS), libraries=libraries())
    assert pd.isna(row(census, BLAS)["size"])
    assert row(census, BLAS)["source"].startswith("default: one per CPU")


def test_blas_when_threadpoolctl_failed_or_saw_nothing():
    failed = report([], error="threadpoolctl is not installed")
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries(failed))
    assert row(census, BLAS)["source"] == (
        "OMP_NUM_THREADS=4 (threadpoolctl: threadpoolctl is not installed)"
    )
    assert census.notes == ("threadpoolctl: threadpoolctl is not installed",)
    census = thread_census(census_run(), (0, 100 * MS), libraries=libraries(report([])))
    assert row(census, BLAS)["source"] == "no BLAS/OpenMP library loaded (threadpoolctl)"


def test_the_last_good_snapshot_wins():
    early = {**report([{**OPENBLAS, "num_threads": 1}]), "when": "profiler window end"}
    broken = report([], error="boom")
    assert last_report(libraries(early, report([OPENBLAS]), broken))["libraries"] == [OPENBLAS]
    assert last_report(libraries(broken)) == broken
    assert last_report(libraries()) is None and last_report(None) is None


def test_tf_data_threads_by_their_tf_names():
    pools = [Pool.TF_DATA, Pool.TF_DATA, Pool.TF_DATA]
    threads = threads_table(pools, 10 * MS)
    threads["tf_name"] = pd.Categorical(
        ["tf_data_private_threadpool", "tf_data_private_threadpool", "tf_data_iterator_resource"]
    )
    census = thread_census(make_run(threads), (0, 10 * MS), libraries=libraries())
    assert row(census, "tf.data")["source"] == (
        "per dataset, not visible process-wide; seen: tf_data_private_threadpool x2, "
        "tf_data_iterator_resource"
    )


# --- without the sampler, and against the sample run ------------------------------------------


def test_without_os_samples():
    census = thread_census(census_run(sampled=False), (0, 100 * MS), libraries=libraries())
    assert not census.sampled and census.on_cpu is None and census.peak_on_cpu is None
    assert census.table["cpu_s"].isna().all() and census.series.empty
    assert census.notes[0].startswith("no OS samples")
    assert row(census, INTER_OP)["traced_busy"] == pytest.approx(0.4)  # the trace still counts
    assert census_stack(census).empty


def test_cpus_given_replace_the_recorded_count():
    run = load(SAMPLE_RUN)
    given = analyze(run, window="all", cpus=8).census
    assert given is not None and (given.cpus, given.cpus_basis) == (8, "given (--cpus)")


@pytest.fixture(scope="module")
def sample() -> Any:
    return analyze(load(SAMPLE_RUN), window="all")


def test_sample_census_agrees_with_cpu_truth_and_core_use(sample: Any):
    census = sample.census
    assert census.sampled and census.cpus == 2
    assert census.on_cpu == pytest.approx(sample.core_use.mean_busy, rel=1e-9)
    assert census.table["cpu_s"].sum() == pytest.approx(sample.cpu["cpu_s"].sum(), rel=1e-9)
    assert census.table["wait_s"].sum() == pytest.approx(sample.cpu["wait_s"].sum(), rel=1e-9)
    # every thread of the run is in one census pool
    assert census.threads == len(sample.run.threads)
    intra = sample.cpu.set_index("pool").loc["intra-op", "cpu_s"]
    assert row(census, INTRA_OP)["cpu_s"] == pytest.approx(intra)
    traced = sample.pools.set_index("pool")["mean"]
    assert row(census, INTRA_OP)["traced_busy"] == pytest.approx(traced["intra-op"])
    # the series integrates to the window's CPU (the last bin ends with the window)
    widths_s = np.diff(np.r_[census.series["t_ns"], census.window[1]]) / 1e9
    on_cpu = census.series[list(census.table["pool"])].sum(axis=1).to_numpy()
    assert (on_cpu * widths_s).sum() == pytest.approx(census.table["cpu_s"].sum(), rel=1e-9)


def test_sample_census_json(sample: Any):
    data = json.loads(json.dumps(sample.to_json()))["census"]
    assert data["cpus"] == 2 and data["sampled"] is True
    assert {p["pool"] for p in data["pools"]} >= {"inter-op", "intra-op", "python", "blas/openmp"}
    inter = next(p for p in data["pools"] if p["pool"] == "inter-op")
    assert inter["size"] == 2 and inter["source"] == "TF_NUM_INTEROP_THREADS=2"
    assert set(data["series"]["on_cpu"]) == {p["pool"] for p in data["pools"]}
    assert len(data["series"]["t_s"]) == len(data["series"]["on_cpu"]["python"])


def test_census_stack_closes_at_the_window_end(sample: Any):
    stack = census_stack(sample.census)
    assert stack["t_ns"].iloc[-1] == sample.window[1]
    assert stack.iloc[-1]["python"] == stack.iloc[-2]["python"]
    assert (stack.drop(columns=["t_ns", "t_s"]).max() > 0).all()  # idle pools are left out


# --- shown: terminal, HTML, markdown ----------------------------------------------------------

EVIL = "[bold]x[/bold] <script>alert(1)</script> |"


def evil_analysis(sample: Any) -> Any:
    lib = {**OPENBLAS, "version": EVIL}
    census = thread_census(sample.run, sample.window, libraries=libraries(report([lib])))
    return dataclasses.replace(sample, census=census)


def test_terminal_shows_the_census_plainly(sample: Any):
    text = render_text(evil_analysis(sample))
    assert "threads by pool against 2 usable CPUs" in text
    assert "TF_NUM_INTRAOP_THREADS=2" in text
    assert f"openblas {EVIL}: 2 threads (threadpoolctl)" in text  # markup not interpreted
    assert text.index("pools (busy") < text.index("threads by pool") < text.index("queue delay")


def test_html_escapes_the_census(sample: Any):
    page = census_section(evil_analysis(sample))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "threads by pool against 2 usable CPUs" in page


def test_markdown_escapes_pipes(sample: Any):
    text = census_text.markdown(evil_analysis(sample))
    assert markdown_text(EVIL).endswith("\\|") and markdown_text(EVIL) in text
    assert "<script>" not in text and "[bold]" not in text  # no HTML, no link syntax
    lines = [line for line in text.splitlines() if line.startswith("| blas/openmp")]
    assert len(lines) == 1 and lines[0].count(" | ") == len(census_text.HEADERS) - 1


def test_summary_lines(sample: Any):
    taken = report([OPENBLAS], env={"OPENBLAS_NUM_THREADS": "2"})
    census = thread_census(sample.run, sample.window, libraries=libraries(taken))
    lines = census_text.summary_lines(dataclasses.replace(sample, census=census))
    assert lines[0] == (
        "pools sized for 6 threads (inter-op 2 + intra-op 2 + blas/openmp 2) on 2 usable CPUs: "
        "3.0 per CPU"
    )
    assert lines[1].startswith(f"on a CPU: {census.on_cpu:.2f} threads on average (")


# --- the capture inside the workload --------------------------------------------------------


def test_blas_threads_are_classified_by_their_library():
    thread = {"start_object": "libscipy_openblas64_-32a4b2a6.so", "python_object": "python3.11"}
    assert pool_of_identity(thread)[0] is Pool.BLAS_OPENMP


def test_snapshot_names_numpys_blas_by_file_name_only():
    pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401  (loads its BLAS)

    taken = thread_libraries.snapshot("now")
    assert taken["error"] is None and taken["when"] == "now"
    blas = [lib for lib in taken["libraries"] if lib["user_api"] == "blas"]
    assert blas and all(isinstance(lib["num_threads"], int) for lib in blas)
    assert all("/" not in lib["file"] for lib in taken["libraries"])
    assert "filepath" not in json.dumps(taken)


def test_snapshot_never_raises(monkeypatch: pytest.MonkeyPatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def broken() -> None:
        raise RuntimeError("a library answered badly")

    monkeypatch.setattr(threadpoolctl, "threadpool_info", broken)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    taken = thread_libraries.snapshot("end of run")
    assert taken["error"] == "RuntimeError: a library answered badly"
    assert taken["env"]["OPENBLAS_NUM_THREADS"] == "2" and taken["libraries"] == []


def test_written_and_read_back(tmp_path: Path):
    libs = ThreadLibraries()
    libs.take("profiler window end")
    libs.take("end of run")
    libs.write(tmp_path)
    data = read_thread_libraries(tmp_path)
    assert data is not None and [s["when"] for s in data["snapshots"]] == [
        "profiler window end",
        "end of run",
    ]
    libs.write(tmp_path / "missing")  # an unwritable place loses the file, nothing else
    assert read_thread_libraries(tmp_path / "missing") is None


# --- end to end: NumPy's OpenBLAS beside TF's pools -----------------------------------------


@pytest.mark.slow
def test_blas_pool_in_a_recorded_run(record: Any):
    """A NumPy product in every step (tf.numpy_function) with OPENBLAS_NUM_THREADS=2: the
    census has a blas/openmp pool of size 2, named by the variable and threadpoolctl, that used
    CPU in the window; the workload's own threadpoolctl report says 2 threads of OpenBLAS."""
    done = record(
        WORKLOADS / "blas_step.py",
        "--steps",
        "30",
        env=quiet_env(OPENBLAS_NUM_THREADS="2"),
    )
    assert done.returncode == 0, done.stderr
    snapshots = done.json("thread_libraries.json")["snapshots"]
    assert [s["when"] for s in snapshots] == ["profiler window end", "end of run"]
    openblas = [lib for lib in snapshots[-1]["libraries"] if lib.get("internal_api") == "openblas"]
    assert openblas and all(lib["num_threads"] == 2 for lib in openblas), snapshots
    census = analyze(load(done.run)).census
    assert census is not None and census.sampled
    blas = row(census, BLAS)
    assert blas["threads"] >= 1 and blas["size"] == 2 * len(openblas)
    assert "OPENBLAS_NUM_THREADS=2" in blas["source"] and "(threadpoolctl)" in blas["source"]
    assert "openblas" in blas["source"]
    assert blas["cpu_s"] > 0 and math.isnan(blas["traced_busy"])
    assert census.on_cpu is not None and census.on_cpu > blas["on_cpu"]


@pytest.mark.slow
def test_in_code_recording_asks_threadpoolctl_too(tmp_path: Path):
    """``tftrace.profile`` writes the same file, from the program's own process."""
    run = tmp_path / "in-code"
    proc = subprocess.run(
        [sys.executable, WORKLOADS / "in_code.py", "--in-code", run],
        capture_output=True,
        text=True,
        env=quiet_env(),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data = read_thread_libraries(run)
    assert data is not None
    snapshots = data["snapshots"]
    assert [s["when"] for s in snapshots] == ["profiler window end", "end of recording"]
    assert all(s["error"] is None for s in snapshots)
    assert any(lib["user_api"] == "blas" for lib in snapshots[-1]["libraries"])  # TF's NumPy
