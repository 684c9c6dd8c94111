"""Which task of a distributed TensorFlow job a recording is, and how far its clock can be
trusted against the other hosts'.

TensorFlow's distributed runtime names each process by ``TF_CONFIG`` (``{"cluster": {...},
"task": {"type": "worker", "index": 0}}``); ``tftrace record -o DIR/{task}`` under any launcher
expands ``{task}`` to ``worker-0``. Hosts line up on one time axis through their wall clocks
(the TF trace is in wall-clock ns), so the kernel's own estimate of its clock error
(``adjtimex``: NTP's estimated and maximum error, and whether the clock is synchronised) is
recorded beside: two hosts' traces are aligned within the sum of their errors.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = "{task}"
TIME_ERROR = 5  # adjtimex's return value when the clock is not synchronised
STA_UNSYNC = 0x0040


class TaskError(ValueError):
    """``{task}`` in a path without a usable TF_CONFIG."""


def task_of(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The task and cluster of ``TF_CONFIG`` in ``env`` ({"type", "index", "name", "cluster"}),
    None when it is unset; TaskError when it is set but not a task of a cluster."""
    raw = env.get("TF_CONFIG")
    if not raw:
        return None
    try:
        config = json.loads(raw)
        task = config["task"]
        kind, index = str(task["type"]), int(task["index"])
    except (ValueError, KeyError, TypeError) as e:
        raise TaskError(f"TF_CONFIG has no task type and index ({e})") from None
    cluster = config.get("cluster") if isinstance(config.get("cluster"), dict) else {}
    members = {str(k): [str(a) for a in v] for k, v in cluster.items() if isinstance(v, list)}
    return {"type": kind, "index": index, "name": f"{kind}-{index}", "cluster": members}


def task_names(cluster: Mapping[str, list[str]]) -> list[str]:
    """Every task of a cluster spec by name (``worker-0``, ``ps-1``, ...), in spec order."""
    return [f"{kind}-{i}" for kind, members in cluster.items() for i in range(len(members))]


def expand_task(path: str, env: Mapping[str, str]) -> str:
    """``path`` with ``{task}`` replaced by this process's task name from TF_CONFIG."""
    if PLACEHOLDER not in path:
        return path
    task = task_of(env)
    if task is None:
        raise TaskError(f"{path}: {PLACEHOLDER} needs TF_CONFIG (the task type and index)")
    return path.replace(PLACEHOLDER, task["name"])


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timex(ctypes.Structure):
    """``struct timex`` of <sys/timex.h> up to ``tick``, padded to its full size."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time", _Timeval),
        ("tick", ctypes.c_long),
        ("_rest", ctypes.c_long * 20),
    ]


def clock_sync() -> dict[str, Any]:
    """The kernel's view of its wall clock (read only: ``modes`` 0 changes nothing):
    synchronised or not, NTP's estimated and maximum error (µs)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        timex = _Timex()
        state = libc.adjtimex(ctypes.byref(timex))
    except (OSError, AttributeError) as e:
        return {"synchronised": None, "error": str(e)}
    if state < 0:
        return {"synchronised": None, "error": f"adjtimex failed (errno {ctypes.get_errno()})"}
    return {
        "synchronised": state != TIME_ERROR and not timex.status & STA_UNSYNC,
        "esterror_us": int(timex.esterror),
        "maxerror_us": int(timex.maxerror),
    }
