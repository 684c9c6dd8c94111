"""Show a sweep: the table, the recommendation in words, its plot and its JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.formatting import fmt, is_missing
from tftrace.analysis.sweep.recommendation import recommendation
from tftrace.analysis.sweep.result import SweepResult
from tftrace.analysis.sweep.stats import label, setting_key
from tftrace.tracer.sweep import SWEEP_KIND


def render(result: SweepResult) -> None:
    from rich import box
    from rich.table import Table

    console = make_console()
    recorded = bool(result.recorded)

    console.print(
        f"sweep of {' '.join(result.target)} · {result.cpus} CPUs · timed: "
        + "; ".join(result.bases),
        markup=False,
        highlight=False,
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    columns = ["", "intra", "inter", "n", result.unit, "±", "speedup", "CPU"]
    if recorded:
        columns += ["intra c", "inter c", "main finding"]
    for i, c in enumerate(columns):
        if c == "main finding":  # finding ids are up to ~30 characters: keep them whole
            table.add_column(c, overflow="fold", min_width=22, ratio=1)
        else:
            table.add_column(c, justify="left" if i == 0 else "right", no_wrap=True)
    v = result.verdict
    for i, r in result.table.iterrows():
        tag = "base" if r["is_baseline"] else ""
        if i == v.recommended and v.kind == "faster":
            tag = "use"
        cells = [
            tag,
            _pool_value(r["intra"]),
            _pool_value(r["inter"]),
            str(int(r["runs"])),
            f"{r['median_s']:.4g}",
            f"{r['spread'] / 2:.1%}",
            f"{r['speedup']:.2f}x",
            fmt(r["cpu_util"], ".0%"),
        ]
        if recorded:
            view = result.recorded.get(setting_key(r))
            cells += [
                fmt(view.intra_concurrency if view else None, ".2f"),
                fmt(view.inter_concurrency if view else None, ".2f"),
                (view.finding.id if view.finding else "none") if view else "-",
            ]
        table.add_row(*cells)
    console.print(table)
    console.print(
        f"n runs · {result.unit}: their median · ±: half their min-max range · speedup: "
        "baseline median / median · CPU: process CPU / (span x CPUs)"
        + (" · c: mean pool concurrency in the recorded run" if recorded else ""),
        markup=False,
        highlight=False,
        style="dim",
    )
    for w in result.warnings:
        console.print(f"warning: {w}", markup=False, highlight=False)
    for line in recommendation(result):
        console.print(line, markup=False, highlight=False)


def _pool_value(value: Any) -> str:
    return "-" if is_missing(value) else "0=TF" if value == 0 else str(int(value))


def _clean(value: Any) -> Any:
    if is_missing(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def to_json(result: SweepResult, root: Path | None = None) -> dict[str, Any]:
    """The result as JSON; run paths relative to ``root`` (the sweep directory) if given."""

    def where(path: Any) -> str:
        path = Path(path)
        if root is not None and path.resolve().is_relative_to(root.resolve()):
            return str(path.resolve().relative_to(root.resolve()))
        return str(path)

    def records(df: pd.DataFrame) -> list[dict[str, Any]]:
        return [{k: _clean(v) for k, v in row.items()} for row in df.to_dict(orient="records")]

    v = result.verdict
    table = records(result.table)
    for row in table:
        view = result.recorded.get((row["intra"], row["inter"]))
        if view is not None:
            row["intra_concurrency"] = view.intra_concurrency
            row["inter_concurrency"] = view.inter_concurrency
            row["main_finding"] = view.finding.id if view.finding else None
            row["concurrency_over"] = view.concurrency_over
            row["recorded_run"] = where(view.path)
    return {
        "target": result.target,
        "cpus": result.cpus,
        "unit": result.unit,
        "timed": result.bases,
        "settings": table,
        "verdict": {
            "kind": v.kind,
            "recommended": _setting(table[v.recommended]),
            "fastest": _setting(table[v.fastest]),
            "slower": [_setting(table[i]) for i in v.slower],
            "within_noise_of_fastest": [_setting(table[i]) for i in v.tied],
            "text": recommendation(result),
        },
        "warnings": result.warnings,
        "runs": [
            {**row, "path": where(row["path"])}
            for row in records(result.runs.drop(columns=["intra_calls", "inter_calls"]))
        ],
    }


def document(result: SweepResult) -> dict[str, Any]:
    """The whole of ``sweep.json``: what the sweep was asked, when, and its result (run paths
    relative to the sweep directory)."""
    return {
        "kind": SWEEP_KIND,
        "created": result.created,
        "options": result.options,
        **to_json(result, result.output),
    }


def _setting(row: dict[str, Any]) -> dict[str, Any]:
    return {"intra": row["intra"], "inter": row["inter"]}


def plot(result: SweepResult, path: Path) -> Path:
    """Speedup against intra-op threads, one line per inter-op value, with the ideal line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result.table
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    x_of = t["intra"].astype("Float64").fillna(0).replace(0, result.cpus).astype(float)
    for inter, rows in t.assign(x=x_of).groupby(t["inter"].astype("string").fillna("default")):
        rows = rows.sort_values("x")
        ax.errorbar(
            rows["x"],
            rows["speedup"],
            yerr=[rows["speedup"] - rows["speedup_lo"], rows["speedup_hi"] - rows["speedup"]],
            marker="o",
            capsize=3,
            label=f"inter {inter}",
        )
    base = t[t["is_baseline"]].iloc[0]
    base_x = result.cpus if pd.isna(base["intra"]) or base["intra"] == 0 else int(base["intra"])
    xs = sorted(set(x_of))
    ax.plot(xs, [min(x, result.cpus) / base_x for x in xs], ":", color="grey", label="ideal")
    ax.axvline(result.cpus, color="black", linewidth=0.8, linestyle="--")
    ax.text(result.cpus, ax.get_ylim()[1], f" {result.cpus} CPUs", va="top", fontsize=8)
    ax.set_xlabel("intra-op threads")
    ax.set_ylabel(f"speedup over {label(base)}")
    ax.set_xticks(xs)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
