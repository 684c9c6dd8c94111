"""The recorder's files of a run, read without trusting them (``tracer.safe_read``) and
checked against the shape their readers rely on.

A file that is absent reads as None (the source did not record). One that is damaged in any
way (not a regular file, too large for memory, not JSON, of another shape, an ``.npz`` whose
columns disagree) reads as None too, and is said in ``missing`` (``Run.missing``); in a file of
records (threads, py-spy's events), a record of another shape is left out and said. The rest
of the run still loads: only the manifest and the trace fail a load (``locate``, ``run``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tftrace.analysis.model.memory import read_limit
from tftrace.tracer import rundir
from tftrace.tracer.safe_read import (
    MAX_JSON_BYTES,
    Between,
    FileAbsent,
    Shape,
    UnreadableFile,
    read_json,
    read_npz_columns,
    shape_error,
)

# Memory per byte of file while it is read: JSON as Python objects (the sample run's py-spy
# trace takes 5x its text at the peak of json.loads) and the tables made of them, with a
# margin; an .npz's columns (its bytes, the arrays, their concatenation).
JSON_PER_BYTE = 16.0
NPZ_PER_BYTE = 4.0

TID = Between(0, 2**32)  # Linux's pid_max is at most 2**22
NS = Between(0, 2**62)  # a monotonic or boot-time reading: centuries of uptime, in ns
TEXT = (str, None)

# Files of records (a list of objects, each of a shape): a record of another shape is left out,
# and said; the file's other records are kept.
SAMPLED_THREAD: Shape = {"tid": TID, "name?": TEXT, "first_seen_ns": NS, "last_seen_ns": NS}
THREAD_TABLE: Shape = {"threads?": [object]}
IDENTITY_THREAD: Shape = {
    "tid": TID,
    "comm?": TEXT,
    "tf_name?": TEXT,
    "python_name?": TEXT,
    "start_object?": TEXT,
    "trace_line_id?": (int, None),
    "first_seen_monotonic_ns?": (NS, None),
}
IDENTITY: Shape = {"python_object?": TEXT, "threads?": [object]}
MACHINE_PROCESS: Shape = {
    "pid": TID,
    "started_ns?": (NS, None),
    "first_seen_ns?": (NS, None),
    "last_seen_ns?": (NS, None),
}
MACHINE_TABLE: Shape = {
    "processes?": [object],
    "cgroup?": (
        {"version?": (int, None), "path?": TEXT, "quota_cpus?": (Between(0, 2**20, False), None)},
        None,
    ),
}
# py-spy's Chrome trace: a list of events, or {"traceEvents": [...]}; ts in microseconds.
PYSPY_EVENT: Shape = {
    "ph?": object,
    "name?": object,
    "ts?": Between(-(2**52), 2**52, whole=False),
    "tid?": (int, str, None),
    "args?": ({"filename?": object, "line?": object}, None),
}
PYSPY_TRACE: Shape = ([object], {"traceEvents": [object]})


def _limit(per_byte: float, most: int | None) -> int | None:
    free = read_limit(per_byte)
    if most is None:
        return free
    return most if free is None else min(free, most)


def read_run_json(
    path: Path, shape: Shape, what: str, missing: list[str], most: int | None = MAX_JSON_BYTES
) -> Any:
    """The JSON file ``path`` of ``shape``; None when absent, or damaged (said in ``missing``
    as ``what: NAME unreadable (why)``)."""
    try:
        return read_json(path, shape, _limit(JSON_PER_BYTE, most))
    except FileAbsent:
        return None
    except UnreadableFile as e:
        missing.append(f"{what}: {path.name} unreadable ({e.reason})")
        return None


def kept_records(
    records: list[Any], shape: Shape, where: str, what: str, missing: list[str]
) -> list[Any]:
    """The records of ``shape``; the others are left out, and said in ``missing`` (how many,
    and what is wrong with the first: ``where[3].tid: expected an integer, found a string``)."""
    bad = {}
    for i, record in enumerate(records):
        problem = shape_error(record, shape, f"{where}[{i}]")
        if problem is not None:
            bad[i] = problem
    if not bad:
        return records
    first = next(iter(bad.values()))
    missing.append(f"{what}: {len(bad)} of {len(records)} records left out ({first})")
    return [r for i, r in enumerate(records) if i not in bad]


def _records_file(
    path: Path, shape: Shape, key: str, record: Shape, what: str, missing: list[str]
) -> dict[str, Any] | None:
    data: dict[str, Any] | None = read_run_json(path, shape, what, missing)
    if data is not None and key in data:
        data[key] = kept_records(data[key], record, f"{path.name}: {key}", what, missing)
    return data


def read_identity(root: Path, missing: list[str]) -> dict[str, Any] | None:
    """``thread_identity.json``: the workload's thread descriptors."""
    path = root / rundir.IDENTITY
    return _records_file(path, IDENTITY, "threads", IDENTITY_THREAD, "thread identity", missing)


def read_thread_table(root: Path, missing: list[str]) -> dict[str, Any] | None:
    """``os_threads/threads.json``: the OS sampler's threads."""
    path = root / rundir.OS_THREADS_TABLE
    return _records_file(path, THREAD_TABLE, "threads", SAMPLED_THREAD, "os sampler", missing)


def read_machine_table(root: Path, missing: list[str]) -> dict[str, Any] | None:
    """``os_threads/machine.json``: the other processes and the cgroup beside the readings."""
    path = root / rundir.MACHINE_TABLE
    return _records_file(path, MACHINE_TABLE, "processes", MACHINE_PROCESS, "machine", missing)


def read_pyspy_events(path: Path, missing: list[str]) -> list[dict[str, Any]] | None:
    """py-spy's trace: its events (each of the types ``PYSPY_EVENT`` says)."""
    data = read_run_json(path, PYSPY_TRACE, "py-spy", missing, most=None)
    if data is None:
        return None
    events = data["traceEvents"] if isinstance(data, dict) else data
    return kept_records(events, PYSPY_EVENT, f"{path.name}: events", "py-spy", missing)


def read_npz_chunk(
    path: Path, groups: Sequence[Sequence[str]], what: str, missing: list[str]
) -> dict[str, Any] | None:
    """One sampler chunk's columns (``safe_read.read_npz_columns``); None when damaged (said
    in ``missing``: the recorder killed mid-write leaves such a chunk)."""
    try:
        return read_npz_columns(path, groups, read_limit(NPZ_PER_BYTE))
    except UnreadableFile as e:
        missing.append(f"{what}: {path.name} unreadable ({e.reason}), skipped")
        return None
