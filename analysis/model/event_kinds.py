"""What a trace event is, from its name (TF's names are in model/vocabulary.py): the kinds
analyses filter on."""

from __future__ import annotations

import enum

import numpy as np
import pandas as pd

from tftrace.analysis.model.vocabulary import (
    DATA_EVENT_PREFIXES,
    DATA_EVENT_SUFFIXES,
    EAGER_LOCAL_EXECUTE,
    EXECUTOR_DONE,
    EXECUTOR_PREFIX,
    EXECUTOR_PROCESS,
    FUNCTION_PREFIXES,
    OP_EVENT,
    TF_CALL_EVENTS,
    TF_INTERNAL_TRACEME_PREFIXES,
    THREADPOOL_RECORD,
    THREADPOOL_START_REGION,
    THREADPOOL_STOP_REGION,
    op_type_of_kernel,
)


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


_EXACT = {
    THREADPOOL_RECORD: EventKind.RECORD,
    THREADPOOL_START_REGION: EventKind.REGION_START,
    THREADPOOL_STOP_REGION: EventKind.REGION_STOP,
    EXECUTOR_PROCESS: EventKind.EXECUTOR,
    EXECUTOR_DONE: EventKind.EXECUTOR,
    **dict.fromkeys(TF_CALL_EVENTS, EventKind.CALL),
}
# First match wins.
_PREFIXES = (
    (EAGER_LOCAL_EXECUTE, EventKind.CALL),
    *((prefix, EventKind.CALL) for prefix in FUNCTION_PREFIXES),
    (EXECUTOR_PREFIX, EventKind.EXECUTOR),
    *((prefix, EventKind.DATA) for prefix in DATA_EVENT_PREFIXES),
)


def split_op(name: str) -> tuple[str, str] | None:
    """("MatMul", "_MklMatMul") for "MatMul:_MklMatMul", else None."""
    match = OP_EVENT.match(name)
    return (match["name"], match["type"]) if match else None


def kind_of(name: str, on_python_thread: bool) -> EventKind:
    if name in _EXACT:
        return _EXACT[name]
    for prefix, kind in _PREFIXES:
        if name.startswith(prefix):
            return kind
    if name.endswith(DATA_EVENT_SUFFIXES):
        return EventKind.DATA
    if split_op(name) is not None:
        return EventKind.OP
    if on_python_thread and not name.startswith(TF_INTERNAL_TRACEME_PREFIXES):
        return EventKind.ANNOTATION
    return EventKind.OTHER


def classify(
    names: pd.Categorical, python_thread: np.ndarray
) -> tuple[pd.Categorical, pd.Categorical, pd.Categorical, pd.Categorical]:
    """(kind, op_name, op_type, op_kernel) for every event, computed once per distinct name.

    ``names`` is the events' name categorical; ``python_thread`` says per event
    whether it ran on a Python thread (which turns unknown names into annotations).
    ``op_kernel`` is the type as the trace names it ("_MklMatMul"), ``op_type`` the op it
    implements ("MatMul"), the same with oneDNN on and off.
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
    op_kernel = pd.Categorical.from_codes(type_code[codes], categories=op_types)
    return kind, op_name, _normalised(op_kernel), op_kernel


def _normalised(op_kernel: pd.Categorical) -> pd.Categorical:
    """Each kernel's category renamed to the op it implements (two kernels may merge)."""
    types = [op_type_of_kernel(k) for k in op_kernel.categories]
    merged = sorted(set(types))
    code_of = np.array([merged.index(t) for t in types] or [-1])
    codes = np.asarray(op_kernel.codes)
    return pd.Categorical.from_codes(
        np.where(codes >= 0, code_of[np.clip(codes, 0, None)], -1), categories=merged
    )
