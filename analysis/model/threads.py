"""One row per thread seen by any source, with its pool and the evidence that decided it.

Sources of evidence, strongest first:
1. The workload's thread descriptors (``thread_identity.json``): TF's own name for
   the thread, the library that started it, and the trace line id it writes under.
   This joins OS threads to trace lines exactly.
2. The trace line name (``tf_Compute/...``, ``tf_numa_-1_Eigen/...``): the pool of a
   line, even for a bare trace with no OS data.
3. The OS name, only where TF managed to set it (``tf_Compute``, ``tf_graph_runner``:
   names no other code would choose). Anything else stays ``unmapped``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.pools import Pool, pool_of_identity, pool_of_tf_name
from tftrace.analysis.model.schema import THREADS, validate
from tftrace.analysis.model.vocabulary import OS_NAMES_SET_BY_TF, is_tf_thread_name


@dataclass(frozen=True)
class TraceLine:
    line_id: int
    name: str
    python_api: bool  # the line carries events of TF's Python API (eager dispatch, ...)
    first_ns: int | None = None  # its first event's start and last event's end, run axis
    last_ns: int | None = None


def line_key(line_id: int, narrow: bool) -> int:
    """TF <= 2.18 writes the low 32 bits of the thread id hash, unsigned; later TF all 64."""
    return line_id & 0xFFFFFFFF if narrow else line_id


def narrow_ids(lines: list[TraceLine]) -> bool:
    return bool(lines) and all(0 <= line.line_id < 2**32 for line in lines)


_UNKNOWN = -1
_DEAD = -2
# The sampler sees a thread up to one period late and early: lifetimes are this fuzzy.
_SIGHTING_SLACK_NS = 20_000_000


def _overlap(row: _Row, line: TraceLine) -> int:
    """How long the thread was alive while its line has events; _DEAD if never, or _UNKNOWN."""
    if (
        row.first_seen_ns is None
        or row.last_seen_ns is None
        or line.first_ns is None
        or line.last_ns is None
    ):
        return _UNKNOWN
    lo = max(row.first_seen_ns - _SIGHTING_SLACK_NS, line.first_ns)
    hi = min(row.last_seen_ns + _SIGHTING_SLACK_NS, line.last_ns)
    return int(hi - lo) if hi >= lo else _DEAD


def _owner(candidates: list[_Row], line: TraceLine) -> _Row | None:
    """The OS thread behind a line. glibc reuses a finished thread's descriptor, so one
    id may name several threads over time: the one alive while the line was written wins;
    a thread known to have ended before the line's first event cannot own it, nor can a
    thread whose descriptor names it differently from the line (``tf_data_...`` vs none)."""
    line_tf_name = tf_name_of_line(line.name)
    alive = [
        row for row in candidates if _overlap(row, line) != _DEAD and row.tf_name == line_tf_name
    ]
    if not alive:
        return None
    return max(alive, key=lambda row: (_overlap(row, line), -(row.tid or 0)))


def tf_name_of_line(name: str) -> str | None:
    """``tf_Compute`` of ``tf_Compute/-4654...``; None for threads TF did not create."""
    head, sep, tail = name.rpartition("/")
    if sep and tail.lstrip("-").isdigit() and is_tf_thread_name(head):
        return head
    return None


def pool_of_line(line: TraceLine, single_python_api_line: bool) -> tuple[Pool, str]:
    tf_name = tf_name_of_line(line.name)
    if tf_name is not None:
        return pool_of_tf_name(tf_name), f"trace line name {tf_name!r}"
    if line.python_api:
        if single_python_api_line:
            return Pool.PYTHON_MAIN, "the only trace line calling TF's Python API"
        return Pool.PYTHON_OTHER, "trace line calling TF's Python API"
    return Pool.UNMAPPED, f"trace line {line.name!r}: not a TF thread, no OS evidence"


@dataclass
class _Row:
    tid: int | None = None
    os_name: str | None = None
    line_id: int | None = None
    line_name: str | None = None
    tf_name: str | None = None
    python_name: str | None = None
    pool: Pool = Pool.UNMAPPED
    evidence: str = "no evidence"
    first_seen_ns: int | None = None
    last_seen_ns: int | None = None


def _os_rows(
    identity: dict[str, Any] | None,
    table: dict[str, Any] | None,
    python_names: dict[int, str],
    origin_mono_ns: int,
) -> dict[int, _Row]:
    rows: dict[int, _Row] = {}
    for t in (table or {}).get("threads", []):
        rows[t["tid"]] = _Row(
            tid=t["tid"],
            os_name=t.get("name"),
            first_seen_ns=t["first_seen_ns"] - origin_mono_ns,
            last_seen_ns=t["last_seen_ns"] - origin_mono_ns,
        )
    for t in (identity or {}).get("threads", []):
        row = rows.setdefault(t["tid"], _Row(tid=t["tid"]))
        row.os_name = row.os_name or t.get("comm")
        row.tf_name = t.get("tf_name")
        row.python_name = t.get("python_name")
        row.line_id = t.get("trace_line_id")
        row.pool, row.evidence = pool_of_identity(
            {**t, "python_object": (identity or {}).get("python_object")}
        )
        if row.first_seen_ns is None and t.get("first_seen_monotonic_ns"):
            row.first_seen_ns = t["first_seen_monotonic_ns"] - origin_mono_ns
    for tid, name in python_names.items():
        row = rows.setdefault(tid, _Row(tid=tid))
        if row.python_name is None:
            row.python_name = name
            if row.pool is Pool.UNMAPPED:
                row.pool, row.evidence = pool_of_identity({"python_name": name})
    for row in rows.values():
        if row.pool is Pool.UNMAPPED and row.os_name and row.os_name.startswith(OS_NAMES_SET_BY_TF):
            row.tf_name = row.os_name
            row.pool = pool_of_tf_name(row.os_name)
            row.evidence = f"OS name {row.os_name!r}, set by TF"
    return rows


def build_threads(
    lines: list[TraceLine],
    identity: dict[str, Any] | None = None,
    sampler_table: dict[str, Any] | None = None,
    python_names: dict[int, str] | None = None,
    origin_mono_ns: int = 0,
) -> tuple[pd.DataFrame, list[int]]:
    """(threads table, thread key of each trace line in ``lines`` order)."""
    by_tid = _os_rows(identity, sampler_table, python_names or {}, origin_mono_ns)
    narrow = narrow_ids(lines)
    by_line_id: dict[int, list[_Row]] = {}
    for row in by_tid.values():
        if row.line_id is not None:
            by_line_id.setdefault(line_key(row.line_id, narrow), []).append(row)
    rows = list(by_tid.values())
    single_api = sum(line.python_api for line in lines) == 1
    line_rows = []
    for line in lines:
        owner = _owner(by_line_id.get(line_key(line.line_id, narrow), []), line)
        if owner is not None and owner.line_name is not None:
            owner = None  # already the owner of another line: the id was reused
        if owner is None:
            row = _Row(line_id=line.line_id)
            row.pool, row.evidence = pool_of_line(line, single_api)
            row.tf_name = tf_name_of_line(line.name)
            rows.append(row)
        else:
            row = owner
        if row.pool is Pool.UNMAPPED:
            row.pool, row.evidence = pool_of_line(line, single_api)
        row.line_name = line.name
        row.line_id = line.line_id
        if row.tf_name is None:
            row.tf_name = tf_name_of_line(line.name)
        line_rows.append(row)
    for row in rows:  # an identity line id with no line in this trace: the thread wrote nothing
        if row.line_name is None:
            row.line_id = None
    frame = _frame(rows)
    key = {id(row): i for i, row in enumerate(rows)}
    return frame, [key[id(row)] for row in line_rows]


def _frame(rows: list[_Row]) -> pd.DataFrame:
    def cat(values: list[str | None]) -> pd.Categorical:
        return pd.Categorical(values)

    df = pd.DataFrame(
        {
            "thread": np.arange(len(rows), dtype=np.int32),
            "tid": pd.array([r.tid for r in rows], dtype="Int64"),
            "os_name": cat([r.os_name for r in rows]),
            "line_id": pd.array([r.line_id for r in rows], dtype="Int64"),
            "line_name": cat([r.line_name for r in rows]),
            "tf_name": cat([r.tf_name for r in rows]),
            "python_name": cat([r.python_name for r in rows]),
            "pool": pd.Categorical(
                [r.pool.value for r in rows], categories=[p.value for p in Pool]
            ),
            "evidence": pd.Series([r.evidence for r in rows], dtype=object),
            "first_seen_ns": pd.array([r.first_seen_ns for r in rows], dtype="Int64"),
            "last_seen_ns": pd.array([r.last_seen_ns for r in rows], dtype="Int64"),
        }
    )
    return validate(df, THREADS)
