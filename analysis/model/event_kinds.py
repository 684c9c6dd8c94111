"""What a trace event is, from its name: the vocabulary analyses filter on."""

from __future__ import annotations

import enum
import re

import numpy as np
import pandas as pd


class EventKind(str, enum.Enum):
    OP = "op"  # a kernel: "MatMul:_MklMatMul" (name:type) on an executor or the caller
    EXECUTOR = "executor"  # the graph executor's own bookkeeping
    CALL = "call"  # eager dispatch and tf.function calls from Python
    RECORD = "threadpool-record"  # a closure scheduled on a thread pool
    REGION_START = "region-start"  # a worker starts running a closure
    REGION_STOP = "region-stop"
    DATA = "tf.data"  # input-pipeline work
    ANNOTATION = "annotation"  # a TraceMe from Python (tf.profiler.experimental.Trace, ...)
    OTHER = "other"


RECORD_NAME = "ThreadpoolListener::Record"
START_NAME = "ThreadpoolListener::StartRegion"
STOP_NAME = "ThreadpoolListener::StopRegion"

_EXACT = {
    RECORD_NAME: EventKind.RECORD,
    START_NAME: EventKind.REGION_START,
    STOP_NAME: EventKind.REGION_STOP,
    "ExecutorState::Process": EventKind.EXECUTOR,
    "ExecutorDoneCallback": EventKind.EXECUTOR,
    "EagerExecute": EventKind.CALL,
    "EagerKernelExecute": EventKind.CALL,
    "KernelAndDeviceFunc::Run": EventKind.CALL,
    "TFE_Py_FastPathExecute_C": EventKind.CALL,
    "TFE_Py_Execute": EventKind.CALL,
    "TFE_Execute": EventKind.CALL,
}
_PREFIXES = (
    ("EagerLocalExecute", EventKind.CALL),
    ("__inference_", EventKind.CALL),
    ("__forward_", EventKind.CALL),
    ("__backward_", EventKind.CALL),
    ("Executor", EventKind.EXECUTOR),
    ("Iterator::", EventKind.DATA),
    ("tf_data", EventKind.DATA),
)
_DATA_SUFFIXES = ("Produce", "Consume")
# An op event: "<node name>:<op type>", node names may hold '/', types are identifiers.
_OP = re.compile(r"^(?P<name>[^\s:][^\s:]*):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")
# Python-side TraceMe names TF itself emits, not user annotations.
_NOT_ANNOTATION = ("MemoryAllocation", "MemoryDeallocation", "BasicCPUAllocator", "ParallelFor")


def split_op(name: str) -> tuple[str, str] | None:
    """("MatMul", "_MklMatMul") for "MatMul:_MklMatMul", else None."""
    match = _OP.match(name)
    return (match["name"], match["type"]) if match else None


def kind_of(name: str, on_python_thread: bool) -> EventKind:
    if name in _EXACT:
        return _EXACT[name]
    for prefix, kind in _PREFIXES:
        if name.startswith(prefix):
            return kind
    if name.endswith(_DATA_SUFFIXES):
        return EventKind.DATA
    if split_op(name) is not None:
        return EventKind.OP
    if on_python_thread and not name.startswith(_NOT_ANNOTATION):
        return EventKind.ANNOTATION
    return EventKind.OTHER


def classify(
    names: pd.Categorical, python_thread: np.ndarray
) -> tuple[pd.Categorical, pd.Categorical, pd.Categorical]:
    """(kind, op_name, op_type) for every event, computed once per distinct name.

    ``names`` is the events' name categorical; ``python_thread`` says per event
    whether it ran on a Python thread (which turns unknown names into annotations).
    """
    categories = list(names.categories)
    codes = np.asarray(names.codes)
    kinds = [e.value for e in EventKind]
    kind_on = np.array([kinds.index(kind_of(n, True).value) for n in categories], dtype=np.int8)
    kind_off = np.array([kinds.index(kind_of(n, False).value) for n in categories], dtype=np.int8)
    kind_codes = np.where(python_thread, kind_on[codes], kind_off[codes])
    kind = pd.Categorical.from_codes(kind_codes, categories=kinds)
    split = [split_op(n) for n in categories]
    op_names = sorted({s[0] for s in split if s})
    op_types = sorted({s[1] for s in split if s})
    name_code = np.array([op_names.index(s[0]) if s else -1 for s in split] or [-1])
    type_code = np.array([op_types.index(s[1]) if s else -1 for s in split] or [-1])
    op_name = pd.Categorical.from_codes(name_code[codes], categories=op_names)
    op_type = pd.Categorical.from_codes(type_code[codes], categories=op_types)
    return kind, op_name, op_type
