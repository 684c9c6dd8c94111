"""The manifest's pools from the workload's report, and the typed reader's defaults."""

from __future__ import annotations

from tftrace.tracer.manifest import pools
from tftrace.tracer.manifest_reader import Manifest


def test_manifest_pools_use_the_workload_report():
    report = {"configured_pools": {"inter_op": 0, "intra_op": 3}, "cpu_affinity": [0, 1, 2, 3]}
    out = pools(report, {"TF_NUM_INTEROP_THREADS": "2"}, affinity=[0])
    assert out["intra_op"]["size"] == 3 and out["intra_op"]["source"] == "config"
    assert out["inter_op"]["size"] == 2 and out["inter_op"]["source"] == "env"
    assert pools(None, {}, affinity=[0, 1])["inter_op"]["size"] == 2


def test_manifest_reads_what_is_there_and_defaults_the_rest():
    empty = Manifest.empty()  # a bare trace's
    assert not empty.exists and empty.usable_cpus is None and empty.pools == {}
    assert empty.pool("intra_op").size is None and empty.source("pyspy").state is None
    partial = Manifest.from_json(
        {
            "kind": "tftrace-run",
            "host": {"cpu_count": 8, "cpu_quota": None},
            "pools": {"intra_op": {"size": 4, "source": "env"}},
            "sources": {"pyspy": {"state": "failed", "reason": "no permission", "rate": 20}},
            "workload": {"setter_calls": [{"setter": "s", "value": 2, "error": "late"}]},
            "clock": {"start": {"wall_ns": 5}},  # no monotonic reading: no anchor
        }
    )
    assert partial.exists and partial.usable_cpus == 8  # no affinity: the machine's count
    assert partial.pool("intra_op").size == 4 and partial.pool("inter_op").source is None
    assert partial.source("pyspy").reason == "no permission"
    assert partial.source("pyspy").details["rate"] == 20
    assert [c.error for c in partial.workload.setter_calls] == ["late"]
    assert partial.clock.start is None and partial.workload.exit_code is None
    with_affinity = Manifest.from_json({"host": {"cpu_count": 8, "cpu_affinity": [0, 1]}})
    assert with_affinity.usable_cpus == 2
    copied = partial.to_json()
    copied["name"] = "changed"
    assert partial.raw.get("name") is None  # to_json() gives a copy
