"""Pairing regions and classifying events, on hand-built tables with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from builders import events_table
from tftrace.analysis.model.event_kinds import EventKind, classify, kind_of, split_op
from tftrace.analysis.model.regions import pair_regions

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
    kind, op_name, op_type = classify(names, python)
    assert list(kind) == ["op", "annotation", "other", "other"]
    assert list(pd.Series(op_name).astype(object).fillna("-")) == ["MatMul", "-", "-", "-"]
    assert list(pd.Series(op_type).astype(object).fillna("-")) == ["_MklMatMul", "-", "-", "-"]
