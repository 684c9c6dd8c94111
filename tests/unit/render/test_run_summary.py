"""The run summary's lines."""

from __future__ import annotations

from tftrace.tracer.manifest_reader import Manifest


def test_summary_says_whether_onednn_was_on():
    from pathlib import Path

    from tftrace.analysis.render.run_summary import RunSummary, summary_lines

    onednn = {"enabled": False, "env": "0"}
    manifest = Manifest.from_json({"kind": "tftrace-run", "workload": {"onednn": onednn}})
    lines = summary_lines(RunSummary(Path("run"), manifest, {}, None))
    assert "oneDNN     off (TensorFlow's answer; TF_ENABLE_ONEDNN_OPTS=0)" in lines
