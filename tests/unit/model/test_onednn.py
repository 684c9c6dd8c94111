"""Whether oneDNN was on, in words, from the manifest."""

from __future__ import annotations

import pytest

from tftrace.tracer.manifest_reader import Manifest


def _manifest_with_onednn(onednn: object) -> Manifest:
    return Manifest.from_json({"kind": "tftrace-run", "workload": {"onednn": onednn}})


@pytest.mark.parametrize(
    ("onednn", "kernels", "text"),
    [
        ({"enabled": True, "env": None}, None, "on (TensorFlow's answer; "),
        ({"enabled": False, "env": "0"}, ["_MklMatMul"], "off (TensorFlow's answer; "),
        (None, None, "unknown (not in the manifest; tftrace report infers it from op names)"),
        (None, ["AddV2", "_MklMatMul"], "on (inferred from op names: _MklMatMul)"),
        (None, ["MatMul", "AddV2"], "off (inferred from op names: MatMul ran as TF's own"),
        (None, ["AddV2"], "unknown (no op in the trace that oneDNN would have replaced)"),
        (
            {"enabled": None, "reason": "the workload did not import tensorflow"},
            None,
            "unknown (the",
        ),
    ],
)
def test_onednn_text(onednn, kernels, text):
    from tftrace.analysis.model.onednn import onednn_text

    assert onednn_text(_manifest_with_onednn(onednn), kernels).startswith(text)


def test_onednn_read_from_the_manifest():
    read = _manifest_with_onednn({"enabled": False, "env": "0"}).workload.onednn
    assert read is not None and read.enabled is False and read.env == "0"
    assert _manifest_with_onednn("yes").workload.onednn is None  # mistyped: not recorded
    assert Manifest.empty().workload.onednn is None
