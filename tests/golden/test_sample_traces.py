"""Golden tests: real run directories recorded under several TF releases, loaded by this version.

Each ``sample_traces/tf-X.Y/expected.json`` was computed with TF's own protobuf module and
plain JSON reading (``sample_traces/make_expected.py``), not with tftrace's code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLE_RUNS
from tftrace.analysis.model.event_kinds import EventKind
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import load

RUNS = [p for p in SAMPLE_RUNS if (p / "expected.json").exists()]
PREFIX_POOL = {
    "tf_Compute": Pool.INTER_OP,
    "tf_numa_-1_Eigen": Pool.INTRA_OP,
    "tf_data_private_threadpool": Pool.TF_DATA,
    "tf_data_iterator_resource": Pool.TF_DATA,
}


def test_at_least_three_releases():
    assert (
        len({json.loads((r / "expected.json").read_text())["tensorflow_version"][:4] for r in RUNS})
        >= 3
    )


@pytest.fixture(scope="module", params=RUNS, ids=[r.name for r in RUNS])
def sample(request):
    run_dir: Path = request.param
    return load(run_dir), json.loads((run_dir / "expected.json").read_text())


def test_event_counts(sample):
    run, expected = sample
    host = expected["host_plane"]
    assert len(run.events) == host["events"]
    kinds = run.events["kind"].value_counts()
    listener = host["threadpool_listener_events"]
    assert kinds[EventKind.RECORD.value] == listener.get("ThreadpoolListener::Record", 0)
    assert kinds[EventKind.REGION_START.value] == listener.get("ThreadpoolListener::StartRegion", 0)
    assert kinds[EventKind.REGION_STOP.value] == listener.get("ThreadpoolListener::StopRegion", 0)
    assert kinds[EventKind.OP.value] == host["op_events_name_colon_type"]


def test_event_times_span(sample):
    run, expected = sample
    host = expected["host_plane"]
    span = run.events["end_ns"].max() - run.events["start_ns"].min()
    expected_span = host["latest_event_end_ns"] - host["earliest_event_start_ns"]
    assert span == pytest.approx(expected_span, abs=2)  # ps -> ns rounding


def test_trace_lines_per_pool(sample):
    run, expected = sample
    lines = run.threads[run.threads["line_id"].notna()]
    assert len(lines) == expected["host_plane"]["lines"]
    for prefix, n in expected["host_plane"]["lines_by_prefix"].items():
        if prefix in PREFIX_POOL:
            in_pool = lines[lines["pool"] == PREFIX_POOL[prefix].value]
            assert (in_pool["line_name"].str.startswith(prefix)).sum() == n, prefix


def test_every_trace_line_is_joined_to_an_os_thread(sample):
    run, expected = sample
    lines = run.threads[run.threads["line_id"].notna()]
    joined = (
        expected["identity"]["host_line_ids_in_identity_low32"]
        or expected["identity"]["host_line_ids_in_identity"]
    )
    assert lines["tid"].notna().sum() >= joined - expected_reused(expected)


def expected_reused(expected: dict) -> int:
    """Lines whose id only matched a thread that had ended before the line was written."""
    return sum(
        1
        for line in expected["identity"].get("host_lines_joined_by_id", [])
        if line["identity_comms"] and all(c.startswith("llvm") for c in line["identity_comms"])
    )


def test_os_side_pool_sizes(sample):
    run, expected = sample
    os_side = run.threads[run.threads["tid"].notna()]
    assert (os_side["pool"] == Pool.INTER_OP.value).sum() == expected["known_pool_sizes"][
        "inter_op"
    ]
    assert (os_side["pool"] == Pool.INTRA_OP.value).sum() == expected["known_pool_sizes"][
        "intra_op"
    ]
    assert (os_side["python_name"] == "MainThread").sum() == 1
    main = os_side[os_side["python_name"] == "MainThread"]
    assert main["pool"].tolist() == [Pool.PYTHON_MAIN.value]


def test_regions_join_their_records(sample):
    run, expected = sample
    host = expected["host_plane"]
    starts = host["threadpool_listener_events"].get("ThreadpoolListener::StartRegion", 0)
    assert len(run.regions) == starts
    unmatched = host.get("startregion_c_values_without_record_p", 0)
    assert run.regions["scheduled_ns"].isna().sum() == unmatched
    assert (run.regions["queue_ns"].dropna() >= 0).all()
    assert (run.regions["end_ns"] >= run.regions["start_ns"]).all()


def test_os_samples_and_python_on_the_same_axis(sample):
    run, _ = sample
    assert not run.samples.empty
    assert run.samples["thread"].isin(run.threads["thread"]).all()
    # The trace window lies inside the sampler's window (both on the run's axis).
    assert run.samples["t_ns"].min() <= run.events["start_ns"].min()
    assert run.samples["t_ns"].max() >= run.events["end_ns"].max() - 50_000_000
    if not run.python.empty:
        assert run.python["thread"].isin(run.threads["thread"]).all()
