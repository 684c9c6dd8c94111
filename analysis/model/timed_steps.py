"""The workload's own timing of its steps (``workload/steps.json``, ``tracer/child/step_timer.py``),
read without trusting it: what a sweep times, and what a profiled window's run holds of the
steps the profiler did not see (``metrics/profiler_cost.py``).

One row per outermost ``tf.function`` (or ``ConcreteFunction``) call, ``Trace`` step block and
``next()`` on a tf.data iterator that gave an element (kind ``iteration``), on every thread:
``kind``, ``name``, ``step_num`` (a ``Trace(step_num=)`` block's, else None),
``thread`` (its Python ident), ``start_ns`` and ``end_ns`` on the run's axis, ``cpu0_ns`` and
``cpu1_ns`` (the process's CPU clock at its start and end). A row of another shape is left out
and said in ``missing``. A sweep's timed runs are read by the same checks
(``timed_steps_frame``): a run directory that travels and a sweep's own child are one format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from tftrace.analysis.model.run_files import read_run_json
from tftrace.tracer import rundir
from tftrace.tracer.safe_read import Between, shape_error

COLUMNS = ("kind", "name", "step_num", "thread", "start_ns", "end_ns", "cpu0_ns", "cpu1_ns")
_INT64 = Between(-(2**63), 2**63 - 1)
_NS = Between(0, 2**63 - 1)
# in the order of COLUMNS, the step timer's
_ROW_SHAPE = (str, str, (_INT64, None), _NS, _NS, _NS, _NS, _NS)
STEPS_FILE = {"main_thread?": (_NS, None), "rows": [object]}


def empty_timed_steps() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype="int64") for c in COLUMNS})
    frame = frame.astype({"kind": "object", "name": "object", "step_num": "object"})
    frame.attrs["main_thread"] = None
    return frame


def _row_problem(row: Any) -> bool:
    if not isinstance(row, list) or len(row) != len(_ROW_SHAPE):
        return True
    return any(shape_error(v, s) is not None for v, s in zip(row, _ROW_SHAPE, strict=True))


def read_timed_steps(root: Path, origin_monotonic_ns: int, missing: list[str]) -> pd.DataFrame:
    """The run's timed steps on its axis; empty where the workload timed none (a run profiled
    throughout, an older run) or the file is damaged (said in ``missing``)."""
    data = read_run_json(root / rundir.STEPS, STEPS_FILE, "step timer", missing)
    return timed_steps_frame(data, origin_monotonic_ns, missing)


def timed_steps_frame(
    data: dict[str, Any] | None, origin_monotonic_ns: int, missing: list[str]
) -> pd.DataFrame:
    """The step timer's rows (``steps.json`` as read: ``rows``, ``main_thread``) as a frame on
    the axis whose zero is ``origin_monotonic_ns``; its rows of another shape left out and
    said in ``missing``."""
    rows = (data or {}).get("rows")
    if not isinstance(rows, list):
        return empty_timed_steps()
    bad = {i for i, row in enumerate(rows) if _row_problem(row)}
    if bad:
        first = f"steps.json: rows[{min(bad)}]: not [kind, name, step, thread, 4 clock readings]"
        missing.append(f"step timer: {len(bad)} of {len(rows)} records left out ({first})")
        rows = [row for i, row in enumerate(rows) if i not in bad]
    if not rows:
        return empty_timed_steps()
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("start_ns", "end_ns"):
        frame[column] = frame[column].astype("int64") - int(origin_monotonic_ns)
    frame = frame[frame["end_ns"] >= frame["start_ns"]].reset_index(drop=True)
    frame.attrs["main_thread"] = (data or {}).get("main_thread")
    return frame
