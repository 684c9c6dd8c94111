"""The machine beside the workload, from a run directory: the OS sampler's machine readings
(``tracer/machine_reader.py``) as ``Run.machine``.

Counters are cumulative, so what happened in a window is their growth between its edges
(``counters.growth``): the helpers of ``Machine`` take a window [lo, hi] on the run's axis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tftrace.analysis.model.counters import growth, without_resets
from tftrace.analysis.model.os_samples import read_chunks
from tftrace.analysis.model.run_files import read_machine_table
from tftrace.analysis.model.schema import (
    MACHINE_CGROUP,
    MACHINE_CPUS,
    MACHINE_PROCESS_NAMES,
    MACHINE_PROCESSES,
    empty,
    validate,
)
from tftrace.tracer.machine_reader import CGROUP_COLUMNS, CHUNKS, CPU_COLUMNS
from tftrace.tracer.process_reader import COLUMNS as PROCESS_COLUMNS

ROLES = ("recorder", "workload-child", "other")
# Each chunk holds three tables, each its columns of one length.
COLUMN_GROUPS = (CPU_COLUMNS, PROCESS_COLUMNS, CGROUP_COLUMNS)


@dataclass(frozen=True, repr=False)
class Machine:
    """What else ran on the machine while the workload did (``schema.MACHINE_*``):

    - ``cpus``: each CPU's busy, idle and steal ns, cumulative, per reading;
    - ``processes``: other processes' CPU ns, cumulative (only those whose CPU time grew);
    - ``process_names``: their pid, name, ``role`` (``recorder``: tftrace's own process and
      py-spy; ``workload-child``: started by the workload; ``other``) and start;
    - ``cgroup``: the workload's cgroup periods, throttled periods and ns, usage ns;
    - ``cgroup_info``: its ``version`` (1 or 2), ``path`` and ``quota_cpus`` (None: no quota).

    Empty tables where the run has no readings (``recorded`` is False).
    """

    cpus: pd.DataFrame
    processes: pd.DataFrame
    process_names: pd.DataFrame
    cgroup: pd.DataFrame
    cgroup_info: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> Machine:
        return cls(
            empty(MACHINE_CPUS),
            empty(MACHINE_PROCESSES),
            empty(MACHINE_PROCESS_NAMES),
            empty(MACHINE_CGROUP),
        )

    @property
    def recorded(self) -> bool:
        return not self.cpus.empty

    def __repr__(self) -> str:
        return (
            f"<Machine: {self.cpus['cpu'].nunique()} CPUs, {len(self.process_names)} other "
            f"processes, cgroup v{self.cgroup_info.get('version', '-')}>"
        )

    def cpu_time(self, lo: int, hi: int, cpus: Iterable[int] | None = None) -> pd.DataFrame:
        """Per CPU (those of ``cpus``, else all): busy, idle and steal ns in [lo, hi]."""
        frame = self.cpus
        if cpus is not None:
            frame = frame[frame["cpu"].isin(list(cpus))]
        rows = []
        for cpu, group in frame.groupby("cpu", sort=True):
            t = group["t_ns"].to_numpy()
            rows.append(
                {
                    "cpu": int(cpu),
                    **{
                        kind: growth(t, group[kind].to_numpy(), lo, hi)
                        for kind in ("busy_ns", "idle_ns", "steal_ns")
                    },
                }
            )
        return pd.DataFrame(rows, columns=["cpu", "busy_ns", "idle_ns", "steal_ns"])

    def process_time(self, lo: int, hi: int) -> pd.DataFrame:
        """Per other process: its name, role and CPU ns in [lo, hi], most first. A process
        that started after the readings began counts from its start."""
        first = int(self.cpus["t_ns"].min()) if self.recorded else 0
        names = self.process_names.set_index("pid")
        rows = []
        for pid, group in self.processes.groupby("pid", sort=True):
            t = group["t_ns"].to_numpy()
            started = names["started_ns"].get(pid) if pid in names.index else None
            born = int(started) if started is not None and pd.notna(started) else None
            zero_at = born if born is not None and born > first else None
            cpu = without_resets(group["cpu_ns"].to_numpy())
            rows.append(
                {
                    "pid": int(pid),
                    "name": names["name"].get(pid, "?"),
                    "role": names["role"].get(pid, "other"),
                    "cpu_ns": growth(t, cpu, lo, hi, zero_at),
                }
            )
        frame = pd.DataFrame(rows, columns=["pid", "name", "role", "cpu_ns"])
        return frame.sort_values("cpu_ns", ascending=False, ignore_index=True)

    def cgroup_time(self, lo: int, hi: int) -> dict[str, float]:
        """The cgroup's periods, throttled periods, throttled ns and usage ns in [lo, hi]; NaN
        for a count the cgroup does not keep, or without readings."""
        t = self.cgroup["t_ns"].to_numpy()
        out = {}
        for column in ("periods", "throttled_periods", "throttled_ns", "usage_ns"):
            value = self.cgroup[column].to_numpy()
            known = value >= 0
            out[column] = growth(t[known], value[known], lo, hi)
        return out


def read_machine(root: Path, origin_mono_ns: int, missing: list[str]) -> Machine | None:
    """The machine readings under ``root`` on the run's axis; None when there are none. A
    damaged chunk (the recorder killed mid-write) is skipped, and said in ``missing``."""
    cols = read_chunks(root, CHUNKS, COLUMN_GROUPS, "machine", missing)
    if cols is None:
        return None
    table = read_machine_table(root, missing) or {}
    return Machine(
        _cpus(cols, origin_mono_ns),
        _processes(cols, origin_mono_ns),
        _names(table.get("processes") or [], origin_mono_ns),
        _cgroup(cols, origin_mono_ns),
        dict(table.get("cgroup") or {}),
    )


def _cpus(cols: dict[str, np.ndarray], origin: int) -> pd.DataFrame:
    def ns(*kinds: str) -> np.ndarray:
        total = np.zeros(len(cols["cpu_t_ns"]), dtype=np.int64)
        for kind in kinds:
            total += cols[f"cpu_{kind}"].astype(np.int64)
        return total

    frame = pd.DataFrame(
        {
            "t_ns": cols["cpu_t_ns"].astype(np.int64) - origin,
            "cpu": cols["cpu_id"].astype(np.int32),
            "busy_ns": ns("user", "nice", "system", "irq", "softirq"),
            "idle_ns": ns("idle", "iowait"),
            "steal_ns": ns("steal"),
        }
    )
    return validate(frame.sort_values(["cpu", "t_ns"], ignore_index=True), MACHINE_CPUS)


def _processes(cols: dict[str, np.ndarray], origin: int) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "t_ns": cols["proc_t_ns"].astype(np.int64) - origin,
            "pid": cols["proc_pid"].astype(np.int64),
            "cpu_ns": cols["proc_cpu_ns"].astype(np.int64),
            "processor": cols["proc_processor"].astype(np.int32),
        }
    )
    frame = frame.sort_values(["pid", "t_ns"], ignore_index=True, kind="stable")
    return validate(frame, MACHINE_PROCESSES)


def _names(entries: list[Any], origin: int) -> pd.DataFrame:
    rows = [e for e in entries if isinstance(e, dict) and isinstance(e.get("pid"), int)]

    def on_axis(key: str) -> list[int | None]:
        return [e[key] - origin if isinstance(e.get(key), int) else None for e in rows]

    frame = pd.DataFrame(
        {
            "pid": pd.Series([e["pid"] for e in rows], dtype=np.int64),
            "name": pd.Series([str(e.get("name", "?")) for e in rows], dtype=object),
            "role": pd.Categorical(
                [e.get("role") if e.get("role") in ROLES else "other" for e in rows],
                categories=ROLES,
            ),
            "started_ns": pd.array(on_axis("started_ns"), dtype="Int64"),
            "first_seen_ns": pd.Series([v or 0 for v in on_axis("first_seen_ns")], dtype=np.int64),
            "last_seen_ns": pd.Series([v or 0 for v in on_axis("last_seen_ns")], dtype=np.int64),
        }
    )
    return validate(frame, MACHINE_PROCESS_NAMES)


def _cgroup(cols: dict[str, np.ndarray], origin: int) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "t_ns": cols["cg_t_ns"].astype(np.int64) - origin,
            "periods": cols["cg_periods"].astype(np.int64),
            "throttled_periods": cols["cg_throttled"].astype(np.int64),
            "throttled_ns": cols["cg_throttled_ns"].astype(np.int64),
            "usage_ns": cols["cg_usage_ns"].astype(np.int64),
        }
    )
    return validate(frame.sort_values("t_ns", ignore_index=True), MACHINE_CGROUP)
