"""The OS thread sampler's series and thread table, from a run directory."""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.tracer import rundir
from tftrace.tracer.os_sampler import COLUMNS


def read_thread_table(root: Path) -> dict[str, Any] | None:
    return rundir.read_json_or_none(root / rundir.OS_THREADS_TABLE)


def read_chunks(
    root: Path, pattern: str, columns: Sequence[str], what: str, missing: list[str]
) -> dict[str, np.ndarray] | None:
    """The sampler's ``pattern`` chunks under ``root`` concatenated, column by column; a
    damaged chunk (the recorder killed mid-write) is skipped and said in ``missing``."""
    parts: list[dict[str, np.ndarray]] = []
    for chunk in sorted((root / rundir.OS_SAMPLES_DIR).glob(pattern)):
        try:
            with np.load(chunk) as data:
                parts.append({c: data[c] for c in columns})
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
            missing.append(f"{what}: {chunk.name} unreadable ({type(e).__name__}), skipped")
    if not parts:
        return None
    return {c: np.concatenate([p[c] for p in parts]) for c in columns}


def read_sample_columns(root: Path, missing: list[str]) -> dict[str, np.ndarray] | None:
    """All the thread samples' chunks concatenated."""
    return read_chunks(root, "samples-*.npz", COLUMNS, "os sampler", missing)


def samples_frame(
    cols: dict[str, np.ndarray], thread_of_tid: dict[int, int], origin_mono_ns: int
) -> pd.DataFrame:
    tids = cols["tid"].astype(np.int64)
    lookup = pd.Series(thread_of_tid, dtype=np.int64)
    thread = lookup.reindex(tids).to_numpy()
    state = pd.Categorical(cols["state"].astype(np.uint8).view("S1").astype(str))
    return pd.DataFrame(
        {
            "thread": thread.astype(np.int32),
            "tid": tids,
            "t_ns": cols["t_ns"].astype(np.int64) - origin_mono_ns,
            "state": state,
            "cpu_ns": cols["cpu_ns"].astype(np.int64),
            "wait_ns": cols["wait_ns"].astype(np.int64),
            "utime": cols["utime"].astype(np.int64),
            "stime": cols["stime"].astype(np.int64),
            "slices": cols["slices"].astype(np.int64),
            "cpu": cols["cpu"].astype(np.int32),
        }
    )
