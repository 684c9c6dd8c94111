"""Which Python: the top Python functions from py-spy's stacks, in analyze, the report and the
Perfetto export. Hand-built tables with figures worked out by hand, then a real workload whose
Python time is in known functions, measured from inside it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from builders import (
    MS,
    cpu_samples_table,
    hand_built_run,
    make_run,
    python_table,
    threads_table,
)
from conftest import NEEDS_QUIET_CORES, SAMPLE_RUN, WORKLOADS, quiet_env, tftrace
from tftrace.analysis.analyze import Analysis, analyze
from tftrace.analysis.export.python_stacks import STACK_TID_BASE, python_stack_slices
from tftrace.analysis.export.trace import build_trace
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.metrics.python_time import python_time, stack_functions
from tftrace.analysis.metrics.trace_figures import trace_figures
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import load
from tftrace.analysis.render.html_sections import python_section
from tftrace.analysis.render.terminal import render_text
from trace_event_format import validate

LAUNCHER = (
    "_run_module_as_main (<frozen runpy>:198);main (bootstrap.py:165);run_path (<frozen runpy>:291)"
)
MAIN, OTHER, OWN = 0, 1, 2
# 0-60 ms in burn (line 7), 60-70 in burn at line 8 (the same function), 70-90 in outer
# itself, 90-100 in rec called by rec (counted once in its total). A side thread in work for
# 50 ms; tftrace's own thread (left out) for 100.
ROWS = [
    (MAIN, 0, 60, f"{LAUNCHER};<module> (w.py:10);outer (w.py:3);burn (w.py:7)"),
    (MAIN, 60, 70, f"{LAUNCHER};<module> (w.py:10);outer (w.py:3);burn (w.py:8)"),
    (MAIN, 70, 90, f"{LAUNCHER};<module> (w.py:11);outer (w.py:4)"),
    (MAIN, 90, 100, f"{LAUNCHER};<module> (w.py:12);rec (w.py:20);rec (w.py:21)"),
    (OTHER, 0, 50, "Thread.run (threading.py:982);work (t.py:2)"),
    (OWN, 0, 100, "IdentityWatcher._run (thread_identity.py:230)"),
]
PYSPY = {
    "state": "recorded",
    "rate": 20,
    "nonblocking": True,
    "samples_line": "Samples: 80 Errors: 5",
}


def hand_run(pyspy: dict[str, object] = PYSPY):
    threads = threads_table([Pool.PYTHON_MAIN, Pool.PYTHON_OTHER, Pool.PROFILER], 100 * MS)
    python = python_table((th, s * MS, e * MS, stack) for th, s, e, stack in ROWS)
    return make_run(threads, python=python, manifest={"sources": {"pyspy": pyspy}})


def by_function(frame, thread: int = MAIN) -> dict[str, dict[str, float]]:
    rows = frame[frame["thread"] == thread].set_index("function")
    return rows[["self_ns", "total_ns", "self_share", "total_share", "self_samples"]].to_dict(
        orient="index"
    )


def test_launcher_frames_are_dropped_and_lines_merged():
    assert stack_functions(ROWS[0][3]) == ["<module> (w.py)", "outer (w.py)", "burn (w.py)"]
    # A stack that is only the launcher keeps its innermost frame.
    assert stack_functions("run_path (<frozen runpy>:291)") == ["run_path (<frozen runpy>)"]


def test_self_and_total_by_hand():
    result = python_time(hand_run(), (0, 100 * MS))
    assert result.present and result.note is None
    assert result.threads["thread"].tolist() == [MAIN, OTHER]  # tftrace's own: left out
    assert result.threads["sampled_ns"].tolist() == [100 * MS, 50 * MS]
    main = by_function(result.functions)
    assert main["burn (w.py)"] == {
        "self_ns": 70 * MS,
        "total_ns": 70 * MS,
        "self_share": 0.7,
        "total_share": 0.7,
        "self_samples": 1,  # 70 ms at 20 Hz
    }
    assert (main["outer (w.py)"]["self_ns"], main["outer (w.py)"]["total_ns"]) == (20 * MS, 90 * MS)
    assert main["<module> (w.py)"]["total_share"] == 1.0
    assert (main["rec (w.py)"]["self_ns"], main["rec (w.py)"]["total_ns"]) == (10 * MS, 10 * MS)
    assert not any("runpy" in f or "bootstrap" in f for f in main)
    assert next(iter(main)) == "burn (w.py)"  # by self time
    assert by_function(result.functions, OTHER)["work (t.py)"]["self_share"] == 1.0


def test_window_clips_the_intervals():
    result = python_time(hand_run(), (0, 80 * MS))
    main = by_function(result.functions)
    assert result.threads["sampled_ns"].tolist() == [80 * MS, 50 * MS]
    assert main["burn (w.py)"]["self_share"] == 70 / 80
    assert main["outer (w.py)"]["self_ns"] == 10 * MS
    assert "rec (w.py)" not in main


def test_only_active_time_counts_where_the_os_sampler_ran():
    """The main thread sleeps (state S, no CPU) from 50 ms on: py-spy's open stacks stop
    counting there; a thread without OS samples keeps its raw intervals."""
    t = np.arange(0, 101, 10, dtype=np.int64) * MS
    cpu = np.minimum(t, 50 * MS)
    samples = cpu_samples_table(MAIN, 100 + MAIN, t, cpu)
    samples["state"] = pd.Categorical(["R" if x < 50 * MS else "S" for x in t])
    run = dataclasses.replace(hand_run(), samples=samples)
    result = python_time(run, (0, 100 * MS))
    assert result.threads["sampled_ns"].tolist() == [50 * MS, 50 * MS]
    main = by_function(result.functions)
    assert main["burn (w.py)"]["self_ns"] == 50 * MS and main["burn (w.py)"]["self_share"] == 1.0
    assert "outer (w.py)" not in main or main["outer (w.py)"]["self_ns"] == 0


def test_top_n_keeps_the_leaders_by_self_and_by_total():
    result = python_time(hand_run(), (0, 100 * MS), top=1)
    assert set(by_function(result.functions)) == {"burn (w.py)", "<module> (w.py)"}


def test_error_share_and_why_it_is_high():
    low = python_time(hand_run(), (0, 100 * MS)).health
    assert (low.samples, low.errors, low.error_share) == (80, 5, 5 / 85)
    assert low.high_errors_reason is None
    high = python_time(hand_run({**PYSPY, "samples_line": "Samples: 60 Errors: 40"}), (0, MS))
    assert high.health.error_share == 0.4
    assert "--nonblocking" in (high.health.high_errors_reason or "")
    blocking = {**PYSPY, "nonblocking": False, "samples_line": "Samples: 60 Errors: 40"}
    reason = python_time(hand_run(blocking), (0, MS)).health.high_errors_reason or ""
    assert "starting or exiting" in reason


def test_no_pyspy_data_says_why_in_one_line(tmp_path: Path):
    run = make_run(manifest={"sources": {"pyspy": {"state": "failed", "reason": "no ptrace"}}})
    result = python_time(run, (0, MS))
    assert not result.present and result.note == "no py-spy data: no ptrace"
    assert result.functions.empty and result.threads.empty
    trace = tmp_path / "alone.xplane.pb"
    trace.write_bytes(next(SAMPLE_RUN.glob("plugins/profile/*/*.xplane.pb")).read_bytes())
    bare = python_time(load(trace), (0, MS))
    assert bare.note is not None and "bare trace" in bare.note and "\n" not in bare.note


def analysed(matters: bool) -> Analysis:
    """The hand-built run of tests/builders.py with the stacks above on its main thread."""
    run = hand_built_run()
    stacks = [r for r in ROWS if r[0] == MAIN]
    stacks[0] = (MAIN, 0, 60, stacks[0][3].replace("burn (w.py", "<script>burn</script> (w.py"))
    python = python_table((th, s * MS, e * MS, stack) for th, s, e, stack in stacks)
    analysis = analyze(dataclasses.replace(run, python=python))
    assert analysis.python_time is not None
    return dataclasses.replace(
        analysis, python_time=dataclasses.replace(analysis.python_time, matters=matters)
    )


def test_terminal_and_html_show_it_where_python_matters():
    shown = analysed(matters=True)
    text = render_text(shown)
    assert "which Python: python (python-main), " in text and " s sampled in the window" in text
    outer = by_function(shown.python_time.functions)["outer (w.py)"]  # type: ignore[union-attr]
    row = next(ln for ln in text.splitlines() if "outer (w.py)" in ln)
    assert f"{outer['self_share']:.1%}" in row and f"{outer['total_share']:.1%}" in row
    page = python_section(shown)
    assert "&lt;script&gt;burn&lt;/script&gt; (w.py)" in page and "<script>" not in page
    hidden = analysed(matters=False)
    lines = [ln for ln in render_text(hidden).splitlines() if ln.startswith("which Python")]
    assert len(lines) == 1 and "not shown" in lines[0]
    assert "not shown" in python_section(hidden)
    assert hidden.to_json()["python_time"]["functions"]  # JSON: always, when py-spy data exists


def test_export_nests_the_stacks_on_a_track_per_python_thread():
    run = hand_run()
    slices = python_stack_slices(trace_figures(run))
    assert set(slices.thread.tolist()) == {STACK_TID_BASE + MAIN, STACK_TID_BASE + OTHER}
    main = [
        (n, int(s), int(e))
        for n, s, e, t in zip(
            slices.names, slices.start_ns, slices.end_ns, slices.thread, strict=True
        )
        if t == STACK_TID_BASE + MAIN
    ]
    # burn stays one slice across its line change; rec inside rec is two nested slices.
    assert ("burn (w.py)", 0, 70 * MS) in main
    assert ("outer (w.py)", 0, 90 * MS) in main
    assert ("<module> (w.py)", 0, 100 * MS) in main
    assert [m for m in main if m[0] == "rec (w.py)"] == [("rec (w.py)", 90 * MS, 100 * MS)] * 2


# A real workload ---------------------------------------------------------------------------

RATE_HZ = 50


@NEEDS_QUIET_CORES
@pytest.mark.slow
def test_burn_python_is_the_top_self_function(record, tmp_path: Path):
    """``burn_python`` spins in pure Python for 1 s and times itself; ``small_ops`` runs TF ops.

    py-spy at 50 Hz: burn_python is the main thread's top function by self time, its self time
    is its measured time within 15 % (or 0.1 s), and its share of the main thread's sampled
    time is at least its measured share of the window (less 0.1). The export has its slice."""
    done = record(
        WORKLOADS / "python_burn.py",
        options=("--pyspy-rate", str(RATE_HZ)),
        env=quiet_env(TF_NUM_INTRAOP_THREADS="2", TF_NUM_INTEROP_THREADS="2"),
    )
    assert done.returncode == 0, done.stderr
    measured = json.loads((done.run / "workload" / "stdout.log").read_text().splitlines()[-1])
    burn_s = measured["burn_python_s"]
    run = load(done.run)
    window = trace_window(run)
    result = python_time(run, window)
    assert result.present, result.note
    main = result.main_thread()
    assert result.threads["pool"].iloc[0] == Pool.PYTHON_MAIN.value
    top = main.iloc[0]
    assert top["function"] == "burn_python (python_burn.py)", main.head()
    tolerance_s = max(0.15 * burn_s, 0.1)
    assert abs(top["self_ns"] / 1e9 - burn_s) <= tolerance_s
    # Its share is of the main thread's sampled time, which is at most the window (py-spy
    # sees a thread only while it is active): so at least its share of the window, at most 1.
    window_s = (window[1] - window[0]) / 1e9
    assert burn_s / window_s - 0.1 <= top["self_share"] <= 1.0
    small = main[main["function"] == "small_ops (python_burn.py)"]
    assert len(small) == 1 and small["total_ns"].iloc[0] > 0
    assert result.health.samples and result.health.error_share is not None

    checked = validate(build_trace(trace_figures(run)))
    (stack_track,) = [
        (pid, tid)
        for (pid, tid), name in checked.thread_names.items()
        if name.startswith("MainThread Python stacks")
    ]
    mine = [s for s in checked.slices if (s.pid, s.tid) == stack_track]
    burn = [s for s in mine if s.name == "burn_python (python_burn.py)"]
    assert len(burn) == 1 and abs((burn[0].end_ns - burn[0].start_ns) / 1e9 - burn_s) <= tolerance_s
    assert any(s.name == "small_ops (python_burn.py)" for s in mine)

    proc = tftrace("analyze", "--json", done.run)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)["python_time"]
    assert shown["note"] is None and shown["threads"][0]["name"] == "MainThread"
    assert shown["py_spy"]["rate"] == RATE_HZ
