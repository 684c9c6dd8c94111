"""A strict checker of the Chrome Trace Event Format (JSON object form), as tests use it.

Written from the format's specification ("Trace Event Format", Google, the document
chrome://tracing and Perfetto follow) plus what Perfetto's importer needs to show a trace
as written: slices on one thread nest, tids are unique across processes, a flow event
binds to a slice open on its thread at its time. Everything checked is listed in
``validate``; the first violation raises ``TraceFormatError`` naming the event.

Times are compared as Perfetto reads them: ``int(µs * 1000.0)`` ns (truncated).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, NoReturn

# Every phase the specification defines; tftrace uses a subset (checked by the tests).
PHASES = set("BEXiICbnestfPNODMVvRc()")
TIME_UNITS = {"ms", "ns"}
TOP_LEVEL = {"traceEvents", "displayTimeUnit", "otherData", "systemTraceEvents", "metadata"}
METADATA = {
    "process_name": "name",
    "process_labels": "labels",
    "process_sort_index": "sort_index",
    "thread_name": "name",
    "thread_sort_index": "sort_index",
}
PROCESS_METADATA = {"process_name", "process_labels", "process_sort_index"}
NEEDS_TID = set("XBEsftiI")


class TraceFormatError(AssertionError):
    pass


@dataclass
class Slice:
    pid: int
    tid: int
    cat: str
    name: str
    start_ns: int
    dur_ns: int
    args: dict[str, Any]

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


@dataclass
class Flow:
    id: Any
    cat: str
    name: str
    start: tuple[int, int, int]  # pid, tid, ns
    finish: tuple[int, int, int]


@dataclass
class Checked:
    """What a valid trace holds, for content tests."""

    phases: Counter[str]
    slices: list[Slice]
    flows: list[Flow]
    counters: dict[tuple[int, str], list[tuple[int, float]]]  # (pid, name) -> (ns, value)
    process_names: dict[int, str]
    thread_names: dict[tuple[int, int], str]
    first_ns: int
    last_ns: int  # the latest ts, or ts + dur of a slice
    slice_ns: dict[str, list[int]] = field(default_factory=dict)


def fail(i: int, event: Any, why: str) -> NoReturn:
    raise TraceFormatError(f"traceEvents[{i}] {json.dumps(event)[:300]}: {why}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def as_ns(us: float) -> int:
    """Perfetto's reading of a µs value: ``int64(us * 1000.0)``."""
    return int(float(us) * 1000.0)


def _check_top(trace: Any) -> list[Any]:
    if not isinstance(trace, dict):
        raise TraceFormatError("top level is not a JSON object")
    extra = set(trace) - TOP_LEVEL
    if extra:
        raise TraceFormatError(f"unknown top-level keys {sorted(extra)}")
    if trace.get("displayTimeUnit") not in TIME_UNITS:
        raise TraceFormatError(f"displayTimeUnit {trace.get('displayTimeUnit')!r} not in ms/ns")
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        raise TraceFormatError("traceEvents is not a non-empty list")
    if "otherData" in trace and not isinstance(trace["otherData"], dict):
        raise TraceFormatError("otherData is not an object")
    # Strict JSON: no NaN/Infinity, and it survives a round trip unchanged.
    if json.loads(json.dumps(trace, allow_nan=False)) != trace:
        raise TraceFormatError("the object does not survive a JSON round trip")
    return events


def _check_common(i: int, e: Any) -> str:
    if not isinstance(e, dict):
        fail(i, e, "event is not an object")
    ph = e.get("ph")
    if not isinstance(ph, str) or ph not in PHASES:
        fail(i, e, f"ph {ph!r} is not a phase of the format")
    if not isinstance(e.get("name"), str):
        fail(i, e, "name missing or not a string")
    if not is_int(e.get("pid")):
        fail(i, e, "pid missing or not an integer")
    if "tid" in e and not is_int(e["tid"]):
        fail(i, e, "tid not an integer")
    if ph in NEEDS_TID and "tid" not in e:
        fail(i, e, f"a {ph!r} event needs a tid")
    if ph != "M" and not is_number(e.get("ts")):
        fail(i, e, "ts missing or not a finite number (µs)")
    if "cat" in e and not isinstance(e["cat"], str):
        fail(i, e, "cat not a string")
    if "args" in e and not isinstance(e["args"], dict):
        fail(i, e, "args not an object")
    return str(ph)


def _check_metadata(i: int, e: dict[str, Any], checked: Checked) -> None:
    key = METADATA.get(e["name"])
    if key is None:
        fail(i, e, "unknown metadata event")
    value = e.get("args", {}).get(key)
    if key == "sort_index" and not is_int(value):
        fail(i, e, "sort_index not an integer")
    if key in ("name", "labels") and not isinstance(value, str):
        fail(i, e, f"{key} not a string")
    if e["name"] == "process_name":
        if e["pid"] in checked.process_names:
            fail(i, e, "process named twice")
        checked.process_names[e["pid"]] = value
    elif e["name"] == "thread_name":
        if "tid" not in e:
            fail(i, e, "thread_name without tid")
        if (e["pid"], e["tid"]) in checked.thread_names:
            fail(i, e, "thread named twice")
        checked.thread_names[(e["pid"], e["tid"])] = value
    elif e["name"] not in PROCESS_METADATA and "tid" not in e:
        fail(i, e, "thread metadata without tid")


def _check_slice(i: int, e: dict[str, Any], checked: Checked) -> None:
    if not is_number(e.get("dur")) or e["dur"] < 0:
        fail(i, e, "X event without a finite dur >= 0")
    if not isinstance(e.get("cat"), str):
        fail(i, e, "X event without cat")
    checked.slices.append(
        Slice(
            e["pid"],
            e["tid"],
            e["cat"],
            e["name"],
            as_ns(e["ts"]),
            as_ns(e["dur"]),
            e.get("args", {}),
        )
    )


def _check_counter(i: int, e: dict[str, Any], checked: Checked) -> None:
    args = e.get("args")
    if not args or not all(is_number(v) for v in args.values()):
        fail(i, e, "counter args must be a non-empty object of numbers")
    for series, value in args.items():
        checked.counters[(e["pid"], f"{e['name']} {series}")].append((as_ns(e["ts"]), value))


def _check_flows(
    starts: dict[Any, tuple[int, dict[str, Any]]],
    finishes: dict[Any, tuple[int, dict[str, Any]]],
    checked: Checked,
) -> None:
    for key, (i, s) in starts.items():
        if key not in finishes:
            fail(i, s, "flow start without a finish (same id, cat and name)")
        j, f = finishes[key]
        if f.get("bp") != "e":
            fail(j, f, 'flow finish without bp "e" (it would bind to the next slice)')
        if as_ns(f["ts"]) < as_ns(s["ts"]):
            fail(j, f, "flow finishes before it starts")
        checked.flows.append(
            Flow(
                key[0],
                key[1],
                key[2],
                (s["pid"], s["tid"], as_ns(s["ts"])),
                (f["pid"], f["tid"], as_ns(f["ts"])),
            )
        )
    for key, (j, f) in finishes.items():
        if key not in starts:
            fail(j, f, "flow finish without a start")


def _check_nesting(slices: list[Slice]) -> None:
    """Slices of one thread nest (Perfetto drops or mis-parents ones that overlap partly)."""
    by_thread: dict[tuple[int, int], list[Slice]] = defaultdict(list)
    for s in slices:
        by_thread[(s.pid, s.tid)].append(s)
    for thread, mine in by_thread.items():
        stack: list[Slice] = []
        for s in sorted(mine, key=lambda s: (s.start_ns, -s.dur_ns)):
            while stack and stack[-1].end_ns <= s.start_ns:
                stack.pop()
            if stack and s.end_ns > stack[-1].end_ns:
                raise TraceFormatError(f"thread {thread}: {s} overlaps {stack[-1]} partly")
            stack.append(s)


def _enclosed(slices: dict[tuple[int, int], list[Slice]], at: tuple[int, int, int]) -> bool:
    """A slice on the thread is open at the instant (a zero-length one counts at its time)."""
    pid, tid, t = at
    return any(
        s.start_ns <= t and (t < s.end_ns or s.start_ns == t) for s in slices.get((pid, tid), [])
    )


def validate(trace: Any) -> Checked:
    """Check ``trace`` (the parsed JSON) strictly; what it holds if valid."""
    events = _check_top(trace)
    checked = Checked(Counter(), [], [], defaultdict(list), {}, {}, 0, 0)
    starts: dict[Any, tuple[int, dict[str, Any]]] = {}
    finishes: dict[Any, tuple[int, dict[str, Any]]] = {}
    used_pids: set[int] = set()
    used_threads: set[tuple[int, int]] = set()
    times: list[int] = []
    for i, e in enumerate(events):
        ph = _check_common(i, e)
        checked.phases[ph] += 1
        if ph == "M":
            _check_metadata(i, e, checked)
            continue
        used_pids.add(e["pid"])
        if "tid" in e:
            used_threads.add((e["pid"], e["tid"]))
        times.append(as_ns(e["ts"]))
        if ph == "X":
            _check_slice(i, e, checked)
            times.append(checked.slices[-1].end_ns)
        elif ph == "C":
            _check_counter(i, e, checked)
        elif ph in "sf":
            if not is_int(e.get("id")) and not isinstance(e.get("id"), str):
                fail(i, e, "flow event without an id")
            key = (e["id"], e.get("cat"), e["name"])
            side = starts if ph == "s" else finishes
            if key in side:
                fail(i, e, f"second flow {ph!r} with the same id, cat and name")
            side[key] = (i, e)
    _check_flows(starts, finishes, checked)
    for pid in used_pids - set(checked.process_names):
        raise TraceFormatError(f"pid {pid} has no process_name")
    for thread in used_threads - set(checked.thread_names):
        raise TraceFormatError(f"pid/tid {thread} has no thread_name")
    tids = Counter(tid for _, tid in used_threads)
    shared = [tid for tid, n in tids.items() if n > 1]
    if shared:
        raise TraceFormatError(f"tids {shared} appear under several pids")
    _check_nesting(checked.slices)
    by_thread: dict[tuple[int, int], list[Slice]] = defaultdict(list)
    for s in checked.slices:
        by_thread[(s.pid, s.tid)].append(s)
    for flow in checked.flows:
        for end in (flow.start, flow.finish):
            if not _enclosed(by_thread, end):
                raise TraceFormatError(f"flow {flow.id}: no slice open at {end}")
    checked.first_ns, checked.last_ns = min(times), max(times)
    for s in checked.slices:
        checked.slice_ns.setdefault(s.cat, []).append(s.start_ns)
    return checked
