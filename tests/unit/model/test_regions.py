"""Pairing regions and classifying events, on hand-built tables with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from builders import events_table
from tftrace.analysis.model.event_kinds import EventKind, classify, kind_of, split_op
from tftrace.analysis.model.regions import pair_regions
from tftrace.analysis.model.vocabulary import is_onednn_kernel, op_type_of_kernel

START, STOP, RECORD = (
    EventKind.REGION_START.value,
    EventKind.REGION_STOP.value,
    EventKind.RECORD.value,
)


def events(rows: list[tuple[int, str, int, int | None, int | None]]) -> pd.DataFrame:
    """rows of (thread, kind, t, p, c) -> an events table of instants named "x"."""
    return events_table((thread, "x", kind, t, t, p, c) for thread, kind, t, p, c in rows)


def test_pairs_are_joined_to_their_record():
    ev = events(
        [
            (0, RECORD, 100, 7, None),
            (0, RECORD, 110, 8, None),
            (1, START, 150, None, 7),
            (1, STOP, 400, None, None),
            (2, START, 500, None, 8),
            (2, STOP, 900, None, None),
        ]
    )
    r = pair_regions(ev)
    assert r[["thread", "start_ns", "end_ns", "flow"]].values.tolist() == [
        [1, 150, 400, 7],
        [2, 500, 900, 8],
    ]
    assert r["scheduled_by"].tolist() == [0, 0]
    assert r["queue_ns"].tolist() == [50, 390]


def test_nested_regions_pair_by_depth():
    ev = events(
        [
            (3, START, 0, None, 1),
            (3, START, 10, None, 2),
            (3, STOP, 20, None, None),
            (3, START, 30, None, 3),
            (3, STOP, 40, None, None),
            (3, STOP, 100, None, None),
        ]
    )
    r = pair_regions(ev).sort_values("start_ns")
    assert r[["start_ns", "end_ns", "flow"]].values.tolist() == [
        [0, 100, 1],
        [10, 20, 2],
        [30, 40, 3],
    ]
    assert r["scheduled_ns"].isna().all()  # no Record in the window


def test_regions_cut_by_the_window_stay_unpaired():
    # thread 4: a stop whose start came before the trace; thread 5: a start never stopped.
    ev = events(
        [
            (4, STOP, 5, None, None),
            (4, START, 10, None, 9),
            (4, STOP, 30, None, None),
            (5, START, 12, None, 10),
            (5, STOP, 20, None, None),
            (5, START, 40, None, 11),
        ]
    )
    r = pair_regions(ev)
    assert sorted(r[["thread", "start_ns", "end_ns"]].values.tolist()) == [[4, 10, 30], [5, 12, 20]]


def test_no_regions():
    assert pair_regions(events([(0, RECORD, 1, 1, None)])).empty


@pytest.mark.parametrize(
    ("name", "python", "kind"),
    [
        ("MatMul:_MklMatMul", False, EventKind.OP),
        ("sequential/dense/MatMul:MatMul", False, EventKind.OP),
        ("ThreadpoolListener::Record", True, EventKind.RECORD),
        ("ExecutorState::Process", False, EventKind.EXECUTOR),
        ("EagerLocalExecute: MatMul", True, EventKind.CALL),
        ("__inference_two_branches_42", True, EventKind.CALL),
        ("MapAndBatchProduce", False, EventKind.DATA),
        ("Iterator::Prefetch", False, EventKind.DATA),
        ("my step", True, EventKind.ANNOTATION),
        ("MemoryAllocation", True, EventKind.OTHER),
        ("my step", False, EventKind.OTHER),
        ("EagerLocalExecute: MatMul", False, EventKind.CALL),
    ],
)
def test_kind_of(name, python, kind):
    assert kind_of(name, python) is kind


def test_split_op():
    assert split_op("a/b/MatMul:_MklMatMul") == ("a/b/MatMul", "_MklMatMul")
    assert split_op("EagerLocalExecute: MatMul") is None
    assert split_op("ThreadpoolListener::Record") is None


def test_classify_vectorised_matches_scalar():
    names = pd.Categorical(["MatMul:_MklMatMul", "step", "step", "ParallelFor"])
    python = np.array([False, True, False, True])
    kind, op_name, op_type, op_kernel = classify(names, python)
    assert list(kind) == ["op", "annotation", "other", "other"]
    assert list(pd.Series(op_name).astype(object).fillna("-")) == ["MatMul", "-", "-", "-"]
    assert list(pd.Series(op_type).astype(object).fillna("-")) == ["MatMul", "-", "-", "-"]
    assert list(pd.Series(op_kernel).astype(object).fillna("-")) == ["_MklMatMul", "-", "-", "-"]


def test_classify_merges_kernels_of_one_op():
    """oneDNN on in one function and off in another (or two traces joined): one op type."""
    names = pd.Categorical(["a:_MklMatMul", "b:MatMul", "c:_MklNativeConv2D", "x"])
    _, _, op_type, op_kernel = classify(names, np.zeros(4, dtype=bool))
    assert list(pd.Series(op_type).astype(object).fillna("-")) == [
        "MatMul",
        "MatMul",
        "Conv2D",
        "-",
    ]
    assert list(op_type.categories) == ["Conv2D", "MatMul"]
    assert list(pd.Series(op_kernel).astype(object).fillna("-")) == [
        "_MklMatMul",
        "MatMul",
        "_MklNativeConv2D",
        "-",
    ]


# Kernel names as TF's graph rewrite (mkl_layout_pass.cc, mkl_graph_util.h) and its remapper
# name them with oneDNN on, beside the op type the same op has with oneDNN off.
ONEDNN_KERNELS = [
    ("_MklMatMul", "MatMul"),
    ("_MklBatchMatMulV2", "BatchMatMulV2"),
    ("_MklEinsum", "Einsum"),
    ("_MklTranspose", "Transpose"),
    ("_MklSoftmax", "Softmax"),
    ("_MklNativeConv2D", "Conv2D"),
    ("_MklNativeConv3D", "Conv3D"),
    ("_MklNativeConv2DBackpropFilter", "Conv2DBackpropFilter"),
    ("_MklNativeConv2DBackpropInput", "Conv2DBackpropInput"),
    ("_MklNativeDepthwiseConv2dNative", "DepthwiseConv2dNative"),
    ("_MklNativeAvgPool", "AvgPool"),
    ("_MklNativeMaxPoolGrad", "MaxPoolGrad"),
    ("_MklNativeFusedBatchNormV3", "FusedBatchNormV3"),
    ("_MklNativeFusedBatchNormGradV3", "FusedBatchNormGradV3"),
    ("_MklFusedBatchNormV3", "FusedBatchNormV3"),
    ("_MklNativeFusedBatchNormEx", "_FusedBatchNormEx"),
    ("_MklFusedMatMul", "_FusedMatMul"),
    ("_MklNativeFusedConv2D", "_FusedConv2D"),
    ("_MklFusedConv2D", "_FusedConv2D"),
    ("_MklNativeFusedDepthwiseConv2dNative", "_FusedDepthwiseConv2dNative"),
    ("_MklEagerConv2D", "Conv2D"),
    ("_MklQuantizedConv2DWithBiasAndRelu", "QuantizedConv2DWithBiasAndRelu"),
    ("_MklLayerNorm", "LayerNorm"),
    ("_MklToTf", "_MklToTf"),  # a layout conversion: no stock op
    # oneDNN off, or ops oneDNN does not rewrite: unchanged.
    ("MatMul", "MatMul"),
    ("_FusedMatMul", "_FusedMatMul"),
    ("FusedBatchNormV3", "FusedBatchNormV3"),
    ("AddV2", "AddV2"),
    ("_Send", "_Send"),
    ("EagerPyFunc", "EagerPyFunc"),
    ("__inference_train_step_123", "__inference_train_step_123"),
    ("_Mkl", "_Mkl"),
]


@pytest.mark.parametrize(("kernel", "op_type"), ONEDNN_KERNELS)
def test_op_type_of_kernel(kernel: str, op_type: str):
    assert op_type_of_kernel(kernel) == op_type
    assert is_onednn_kernel(kernel) == (kernel != op_type or kernel.startswith("_Mkl"))
