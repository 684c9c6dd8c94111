"""The numbers of a sweep: per-setting medians and spreads, speedups, and a verdict that
respects noise.

A setting beats another only when their ranges (min..max over the repeats) do not overlap
and the gain is at least ``MIN_GAIN``: with five interleaved repeats, disjoint ranges are
a conservative test (the chance that 5 + 5 draws of the same distribution fall apart is
2 / C(10, 5) = 0.8 %). When the ranges overlap, the verdict is "no significant
difference", never a winner picked from noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tftrace.tracer.sweep import Setting
from tftrace.tracer.sweep_setting import ENV_NAME

MIN_REPEATS = 3  # fewer repeats give no spread worth judging
MIN_GAIN = 0.03  # differences below 3 % are not worth a setting, even when consistent

# One row per timed run.
RUN_COLUMNS = ("intra", "inter", "round", "time_s", "cpu_util")
# Figures of a run beside its time, each summarized by its median over the runs: steps (a
# server's requests) per second and the latency percentiles (``timing.Latency``).
FIGURE_COLUMNS = ("per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms")


def env_columns(df: pd.DataFrame | pd.Series) -> list[str]:
    """A table's environment knobs: the columns named in capitals (every other is lower case)."""
    names = df.columns if isinstance(df, pd.DataFrame) else df.index
    return [str(c) for c in names if ENV_NAME.fullmatch(str(c))]


def setting_columns(df: pd.DataFrame) -> list[str]:
    """The columns that say a row's setting: pools, copies, CPUs pinned to, variables."""
    pools = [c for c in ("intra", "inter", "instances", "cores") if c in df.columns]
    return pools + env_columns(df) + (["cpus"] if "cpus" in df.columns else [])


def _key(df: pd.DataFrame) -> pd.Series:
    return pd.Series([repr(setting_of(r).key()) for _, r in df.iterrows()], index=df.index)


def _as_setting(baseline: Setting | tuple[int | None, ...]) -> Setting:
    """A baseline given as a ``Setting``, or as (intra, inter[, instances])."""
    if isinstance(baseline, Setting):
        return baseline
    return Setting(baseline[0], baseline[1], baseline[2] if len(baseline) > 2 else None)


def summarize(runs: pd.DataFrame, baseline: Setting | tuple[int | None, ...]) -> pd.DataFrame:
    """One row per setting, in the order the settings first appear.

    Columns: intra, inter, runs, median_s, min_s, max_s, spread (max-min over the
    median), speedup (baseline median / median), speedup_lo / speedup_hi (worst and best
    case from the two ranges), cpu_util (median), is_baseline; with instances (a column of
    ``runs``) also instances and cores; cpus and one column per environment variable where
    ``runs`` has them; the medians of ``FIGURE_COLUMNS`` where ``runs`` has them.
    ``baseline`` is the baseline ``Setting`` (or its pools, as (intra, inter[, instances])).
    """
    runs = runs.assign(_key=_key(runs))
    order = list(dict.fromkeys(runs["_key"]))
    g = runs.groupby("_key", sort=False)
    columns = {name: g[name].first() for name in setting_columns(runs)}
    columns.update(
        runs=g["time_s"].count(),
        median_s=g["time_s"].median(),
        min_s=g["time_s"].min(),
        max_s=g["time_s"].max(),
        cpu_util=g["cpu_util"].median(),
    )
    for name in FIGURE_COLUMNS:
        if name in runs.columns:
            columns[name] = (
                pd.to_numeric(runs[name], errors="coerce").groupby(runs["_key"]).median()
            )
    table = pd.DataFrame(columns).loc[order]
    base_key = repr(_as_setting(baseline).key())
    base = table.loc[base_key]
    table["spread"] = (table["max_s"] - table["min_s"]) / table["median_s"]
    table["speedup"] = base["median_s"] / table["median_s"]
    table["speedup_lo"] = base["min_s"] / table["max_s"]
    table["speedup_hi"] = base["max_s"] / table["min_s"]
    table["is_baseline"] = table.index == base_key
    return table.reset_index(drop=True)


def faster(a: pd.Series, b: pd.Series) -> bool:
    """``a`` is faster than ``b`` beyond noise: disjoint ranges and a gain worth having."""
    return bool(a["max_s"] < b["min_s"] and b["median_s"] / a["median_s"] >= 1 + MIN_GAIN)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "faster" | "no-difference" | "too-few-runs"
    recommended: int  # row of the summary
    fastest: int  # row with the lowest median
    slower: tuple[int, ...]  # rows significantly slower than the recommended one
    tied: tuple[int, ...]  # rows within noise of the fastest


def verdict(table: pd.DataFrame, cpus: int) -> Verdict:
    """The setting to use: the baseline unless something beats it beyond noise; among the
    settings within noise of the fastest, the one with the fewest threads."""
    fastest = int(table["median_s"].idxmin())
    base = int(table.index[table["is_baseline"]][0])
    tied = tuple(int(i) for i in table.index if not faster(table.loc[fastest], table.loc[i]))
    if int(table["runs"].min()) < MIN_REPEATS:
        return Verdict("too-few-runs", fastest, fastest, (), tied)
    if base in tied:
        slower = tuple(int(i) for i in table.index if faster(table.loc[base], table.loc[i]))
        return Verdict("no-difference", base, fastest, slower, tied)
    threads = _threads(table, cpus)
    # Among those within noise: one process before several, then the fewest CPUs pinned to,
    # then the fewest threads.
    settings = {int(i): setting_of(r) for i, r in table.iterrows()}
    copies = {i: s.instances or 1 for i, s in settings.items()}
    held = {i: s.cpus or cpus for i, s in settings.items()}
    pick = min(tied, key=lambda i: (copies[i], held[i], threads[i], table.loc[i, "median_s"]))
    slower = tuple(int(i) for i in table.index if faster(table.loc[pick], table.loc[i]))
    return Verdict("faster", pick, fastest, slower, tied)


def _number(row: pd.Series, key: str) -> int | None:
    value = row.get(key)
    return None if value is None or pd.isna(value) else int(value)


def setting_of(row: pd.Series) -> Setting:
    """The ``Setting`` of a table (or runs) row: None where the sweep left a pool to TF;
    its instances and cores where the sweep ran copies; its CPUs and variables (a missing
    value: the variable removed) where the sweep set them."""
    intra, inter, instances, cores, cpus = (
        _number(row, k) for k in ("intra", "inter", "instances", "cores", "cpus")
    )
    env = tuple((n, None if _missing(row[n]) else str(row[n])) for n in env_columns(row))
    return Setting(intra, inter, instances, cores, env, cpus)


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def setting_key(row: pd.Series) -> tuple[Any, ...]:
    """``Setting.key()`` of a table row: (intra, inter), None where the sweep left the pool
    to TF, the instances where the sweep ran copies, then its CPUs and variables."""
    return setting_of(row).key()


def label_of(intra: Any, inter: Any) -> str:
    """``Setting.label`` for values from a DataFrame (NA = left to TF)."""
    return setting_of(pd.Series({"intra": intra, "inter": inter})).label()


def label(row: pd.Series) -> str:
    """The setting of a table row in words (``intra 2 · inter default``)."""
    return setting_of(row).label()


def _threads(table: pd.DataFrame, cpus: int) -> dict[int, int]:
    return {int(i): setting_of(r).threads(cpus) for i, r in table.iterrows()}


def beyond_cpus(table: pd.DataFrame, cpus: int) -> list[int]:
    """Rows whose intra- or inter-op pool alone has more threads than the usable CPUs (or
    than the CPUs the row's setting is pinned to)."""
    over = []
    for i, r in table.iterrows():
        limit = setting_of(r).cpus or cpus
        if any(not pd.isna(v) and v > limit for v in (r["intra"], r["inter"])):
            over.append(int(i))
    return over


# A finding's verification is one comparison stated before the runs (the finding's claim),
# not a search over a grid, so it is judged by a one-sided test at the usual level instead of
# the sweep's disjoint ranges: with 7 runs each, one disturbed run (a burst of CPU steal on a
# shared machine) cannot by itself hide a real speedup, as it can with disjoint ranges.
ALPHA = 0.05


def p_faster(fast: Sequence[float], slow: Sequence[float]) -> float:
    """One-sided p-value that ``fast``'s times are typically lower than ``slow``'s (the
    Mann-Whitney U test, exact for small samples without ties)."""
    from scipy.stats import mannwhitneyu  # here: scipy.stats takes half a second to import

    return float(mannwhitneyu(list(fast), list(slow), alternative="less").pvalue)


def pairwise_speedup(base: Sequence[float], other: Sequence[float]) -> float:
    """``other``'s speedup over ``base``: the median of every base/other ratio (the
    Hodges-Lehmann estimate that goes with the U test; one outlying run barely moves it)."""
    return float(np.median(np.divide.outer(np.asarray(base), np.asarray(other))))
