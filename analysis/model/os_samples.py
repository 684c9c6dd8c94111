"""The OS thread sampler's series, from a run directory (its thread table: ``run_files``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from tftrace.analysis.model.run_files import read_npz_chunk
from tftrace.tracer import rundir
from tftrace.tracer.os_sampler import COLUMNS


def read_chunks(
    root: Path,
    pattern: str,
    groups: Sequence[Sequence[str]],
    what: str,
    missing: list[str],
) -> dict[str, np.ndarray] | None:
    """The sampler's ``pattern`` chunks under ``root`` concatenated, column by column (the
    columns of each of ``groups`` are of one length in every chunk); a damaged chunk (the
    recorder killed mid-write, or any file that is not one) is skipped and said in
    ``missing``."""
    parts: list[dict[str, np.ndarray]] = []
    for chunk in sorted((root / rundir.OS_SAMPLES_DIR).glob(pattern)):
        data = read_npz_chunk(chunk, groups, what, missing)
        if data is not None:
            parts.append(data)
    if not parts:
        return None
    columns = [c for group in groups for c in group]
    return {c: np.concatenate([p[c] for p in parts]) for c in columns}


def read_sample_columns(root: Path, missing: list[str]) -> dict[str, np.ndarray] | None:
    """All the thread samples' chunks concatenated."""
    return read_chunks(root, "samples-*.npz", (COLUMNS,), "os sampler", missing)


def samples_frame(
    cols: dict[str, np.ndarray], thread_of_tid: dict[int, int], origin_mono_ns: int
) -> pd.DataFrame:
    known = np.isin(cols["tid"], np.fromiter(thread_of_tid, dtype=np.int64))
    if not known.all():  # a thread no table names (a damaged one): no thread key to give it
        cols = {c: v[known] for c, v in cols.items()}
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
