"""A sweep directory's recorded runs compared setting by setting: each recorded setting
against the baseline's recorded run (``tftrace diff SWEEP``).

A sweep records the baseline (and the recommended setting) once with every source to explain
its verdict, and every setting with ``--record``; ``sweep.json`` names each setting's
``recorded_run``. Only those runs have the trace a diff needs: the timed runs have none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tftrace.analysis.diff.manifest_diff import RunsNotComparable
from tftrace.analysis.diff.result import RunDiff, records
from tftrace.analysis.presenting import as_html, as_text
from tftrace.analysis.sweep.result import DAMAGED, inside
from tftrace.tracer.rundir import read_json_or_none
from tftrace.tracer.sweep import SWEEP_FILE, SWEEP_KIND, Setting

SUMMARY_COLUMNS = (
    "setting",
    "steps",
    "median_ms",
    "speedup",
    "p_value",
    "verdict",
    "inter_op_mean",
    "intra_op_mean",
)


@dataclass(frozen=True)
class SweepDiff:
    """Each recorded setting of a sweep against its recorded baseline: ``diffs`` maps the
    setting's label (``"intra 2 · inter 1"``) to its ``RunDiff`` (A: the baseline); ``table``
    sums them up, one row per setting. Example::

        sd = tftrace.analysis.diff.diff_sweep("tftrace-sweeps/matmul")
        sd.table[["setting", "speedup", "verdict"]]
    """

    path: Path
    baseline: str
    diffs: dict[str, RunDiff]

    @property
    def table(self) -> pd.DataFrame:
        rows = []
        for label, d in self.diffs.items():
            figures = d.pools.set_index(["pool", "figure"])["b"]
            rows.append(
                (
                    label,
                    d.step_time.b.steps,
                    d.step_time.b.median_ms,
                    d.step_time.speedup,
                    d.step_time.p_value,
                    d.step_time.verdict,
                    float(figures.get(("inter-op", "mean concurrency"), float("nan"))),
                    float(figures.get(("intra-op", "mean concurrency"), float("nan"))),
                )
            )
        return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))

    def to_json(self) -> dict[str, Any]:
        return {
            "sweep": str(self.path),
            "baseline": self.baseline,
            "table": records(self.table),
            "settings": {label: d.to_json() for label, d in self.diffs.items()},
        }

    def to_html(self) -> str:
        return as_html(self)

    def __str__(self) -> str:
        return as_text(self)


def recorded_runs(path: Path) -> tuple[str, Path, dict[str, Path]]:
    """(the baseline's label, its recorded run, the other recorded settings' runs by label)
    of a sweep directory; ``RunsNotComparable`` where there is nothing to compare."""
    path = Path(path)
    data = read_json_or_none(path / SWEEP_FILE)
    if data is None or data.get("kind") != SWEEP_KIND:
        raise RunsNotComparable(f"{path}: not a sweep directory (no readable sweep.json)")
    settings = data.get("settings")
    base: tuple[str, Path] | None = None
    others: dict[str, Path] = {}
    for s in settings if isinstance(settings, list) else []:
        if not isinstance(s, dict) or not s.get("recorded_run"):
            continue
        try:
            label, run = Setting.from_json(s).label(), inside(path, s["recorded_run"])
        except DAMAGED as e:
            raise RunsNotComparable(f"{path}: sweep.json is damaged ({e})") from None
        if s.get("is_baseline"):
            base = (label, run)
        else:
            others[label] = run
    if base is None:
        raise RunsNotComparable(
            f"{path}: the sweep's baseline was not recorded, so there is nothing to compare "
            "its settings with"
        )
    if not others:
        raise RunsNotComparable(
            f"{path}: only the baseline was recorded; record every setting with "
            "tftrace sweep --record to compare them setting by setting"
        )
    return base[0], base[1], others


def diff_sweep(path: Path | str, **options: Any) -> SweepDiff:
    """Every recorded setting of the sweep at ``path`` against its recorded baseline
    (``options``: as ``diff`` takes them: window, warmup_steps, cpus)."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.diff.compare import diff
    from tftrace.analysis.model.run import load

    label, base_path, others = recorded_runs(Path(path))
    base = analyze(load(base_path), **options)
    diffs = {name: diff(base, load(run), **options) for name, run in others.items()}
    return SweepDiff(Path(path), label, diffs)
