"""py-spy's Chrome-trace output as intervals of one stack per Python thread.

py-spy writes B/E events for the frames that change between samples; replaying
them per thread gives the stack at every moment. The root frame of each stack
is named ``thread (<os tid>): <thread name>``, or ``thread (<os tid>)`` for a thread Python
did not start (a TF thread running a ``tf.py_function``), which is how OS tids are known.
Times are microseconds since py-spy started; ``offset_ns`` puts them on the run's axis.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.run_files import read_pyspy_events

# An OS tid is at most 10 ASCII digits (int64 and int() stay far away).
_ROOT = re.compile(r"^thread \(([0-9]{1,10})\)(?:: (.*))?$")


def read_pyspy(path: Path, missing: list[str]) -> list[dict[str, Any]] | None:
    """py-spy's events; None when absent or damaged (said in ``missing``)."""
    return read_pyspy_events(path, missing)


def python_threads(events: list[dict[str, Any]]) -> dict[int, str]:
    """OS tid -> Python thread name, from the root frames of the threads that have one."""
    found = {}
    for e in events:
        match = _ROOT.match(str(e.get("name", ""))) if e.get("ph") == "B" else None
        if match and match[2]:
            found[int(match[1])] = match[2]
    return found


def stack_intervals(events: list[dict[str, Any]]) -> list[tuple[int, int, int, str, str]]:
    """(os tid, start_us, end_us, stack, leaf) for every interval with a constant stack."""
    stacks: dict[Any, list[str]] = {}
    tid_of: dict[Any, int] = {}
    since: dict[Any, int] = {}
    out: list[tuple[int, int, int, str, str]] = []
    for e in sorted(events, key=lambda e: (e.get("ts", 0), 0 if e.get("ph") == "E" else 1)):
        key, ts, ph = e.get("tid"), int(e.get("ts", 0)), e.get("ph")
        stack = stacks.setdefault(key, [])
        if stack and key in tid_of and ts > since.get(key, ts):
            out.append((tid_of[key], since[key], ts, ";".join(stack[1:]), stack[-1]))
        since[key] = ts
        if ph == "B":
            name = str(e.get("name", ""))
            match = _ROOT.match(name) if not stack else None
            if match:
                tid_of[key] = int(match[1])
            else:
                args = e.get("args") or {}
                name = f"{name} ({Path(str(args.get('filename', ''))).name}:{args.get('line', 0)})"
            stack.append(name)
        elif ph == "E" and stack:
            stack.pop()
    return [row for row in out if row[3]]


def python_frame(
    intervals: list[tuple[int, int, int, str, str]], thread_of_tid: dict[int, int], offset_ns: int
) -> pd.DataFrame:
    """The intervals of the threads the run knows (an unknown tid has no thread key)."""
    intervals = [r for r in intervals if r[0] in thread_of_tid]
    tids = np.array([r[0] for r in intervals], dtype=np.int64)
    lookup = pd.Series(thread_of_tid, dtype=np.int64)
    return pd.DataFrame(
        {
            "thread": lookup.reindex(tids).to_numpy().astype(np.int32),
            "tid": tids,
            "start_ns": np.array([r[1] for r in intervals], dtype=np.int64) * 1000 + offset_ns,
            "end_ns": np.array([r[2] for r in intervals], dtype=np.int64) * 1000 + offset_ns,
            "stack": pd.Categorical([r[3] for r in intervals]),
            "leaf": pd.Categorical([r[4] for r in intervals]),
        }
    )
