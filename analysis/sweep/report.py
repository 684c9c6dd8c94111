"""Show a sweep: the table, the recommendation in words, its plot and its JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.console import say
from tftrace.analysis.render.formatting import fmt, is_missing
from tftrace.analysis.render.table import Table, print_table
from tftrace.analysis.sweep.outcome import SweepResult, measure_words, recommendation
from tftrace.analysis.sweep.result import copies_of
from tftrace.analysis.sweep.stats import (
    FIGURE_COLUMNS,
    env_columns,
    label,
    setting_columns,
    setting_key,
    setting_of,
)
from tftrace.analysis.sweep.timing import Objective
from tftrace.tracer.safe_files import atomic_output
from tftrace.tracer.sweep import SWEEP_KIND, Setting
from tftrace.tracer.sweep_setting import ENV_NAME


def _rate_name(result: SweepResult) -> str:
    """``per_s`` as the JSON names it: requests per second for a server, else steps."""
    return "requests_per_s" if result.server else "steps_per_s"


def render(result: SweepResult) -> None:
    """The table and the words: the target's argv, variables' values and warnings are the
    user's, shown as text (``console.say`` / ``console.table``)."""
    from rich import box

    console = make_console()
    recorded = bool(result.recorded)
    latency = result.shows_latency
    knobs = _knob_columns(result.table)

    say(
        console,
        f"sweep of {' '.join(result.target)} · {result.cpus} CPUs · "
        + (f"{_crossed(result.table)} · " if knobs else "")
        + "timed: "
        + "; ".join(result.bases)
        + (f" · decided by: {measure_words(result)}" if latency else ""),
    )
    columns = ["", "intra", "inter", *knobs, "n", result.unit, "±", "speedup", "CPU"]
    rate = "req/s" if result.server else "steps/s"
    if latency:
        star = {Objective.THROUGHPUT: rate, Objective.P50: "p50 ms", Objective.P99: "p99 ms"}
        shown = [rate, "p50 ms", "p99 ms"]
        shown = [f"{c}*" if c == star[result.objective] else c for c in shown]
        pinned = ["copies"] if result.instances else []
        columns = ["", *pinned, "intra", "inter", *knobs, "n", *shown, "±", "gain", "CPU"]
    # A server's table is wide already: its recorded runs are told in lines below it.
    recorded_columns = recorded and not latency
    if recorded_columns:
        columns += ["intra c", "inter c", "main finding"]
    rows = []
    v = result.verdict
    for i, r in result.table.iterrows():
        tag = "base" if r["is_baseline"] else ""
        if i == v.recommended and v.kind == "faster":
            tag = "use"
        knob_cells = _knob_cells(r, knobs)
        cells = [
            tag,
            _pool_value(r["intra"]),
            _pool_value(r["inter"]),
            *knob_cells,
            str(int(r["runs"])),
            f"{r['median_s']:.4g}",
            f"{r['spread'] / 2:.1%}",
            f"{r['speedup']:.2f}x",
            fmt(r["cpu_util"], ".0%"),
        ]
        if latency:
            pinned = [f"{int(r['instances'])}x{int(r['cores'])}"] if result.instances else []
            cells = [
                tag,
                *pinned,
                _pool_value(r["intra"]),
                _pool_value(r["inter"]),
                *knob_cells,
                str(int(r["runs"])),
                fmt(r["per_s"], ".4g"),
                fmt(r["p50_ms"], ".3g"),
                fmt(r["p99_ms"], ".3g"),
                f"{r['spread'] / 2:.1%}",
                f"{r['speedup']:.2f}x",
                fmt(r["cpu_util"], ".0%"),
            ]
        if recorded_columns:
            view = result.recorded.get(setting_key(r))
            cells += [
                fmt(view.intra_concurrency if view else None, ".2f"),
                fmt(view.inter_concurrency if view else None, ".2f"),
                (view.finding.id if view.finding else "none") if view else "-",
            ]
        rows.append(cells)
    # finding ids are up to ~30 characters: that column folds them, the others never wrap
    finding_column = columns.index("main finding") if recorded_columns else None
    fold, whole = {"overflow": "fold", "min_width": 22, "ratio": 1}, {"no_wrap": True}
    table = Table(
        "",
        tuple(columns),
        rows,
        text_at=() if finding_column is None else (finding_column,),
        options={"box": box.SIMPLE_HEAD, "pad_edge": False, "collapse_padding": True},
        column_options={i: fold if i == finding_column else whole for i in range(len(columns))},
    )
    print_table(console, table)
    if latency:
        what = "requests" if result.server else "steps"
        note = (
            f"n runs · {rate}, p50, p99 (ms): medians over the runs, of the {what} that ended "
            "after the warm-up"
            + (
                "; with instances, the copies' rates summed and their latencies pooled"
                if result.instances
                else ""
            )
            + (" · copies: instances x cores each" if result.instances else "")
            + " · *: the objective, which decides · ±: half its min-max range · gain: on the "
            "objective, against the baseline (above 1: better) · CPU: process CPU / "
            "(span x CPUs)"
        )
    else:
        note = (
            f"n runs · {result.unit}: their median · ±: half their min-max range · speedup: "
            "baseline median / median · CPU: process CPU / (span x CPUs)"
        )
    say(
        console,
        note + (" · c: mean pool concurrency in the recorded run" if recorded_columns else ""),
        style="dim",
    )
    if recorded and not recorded_columns:
        for _, r in result.table.iterrows():
            view = result.recorded.get(setting_key(r))
            if view is None:
                continue
            finding = view.finding.id if view.finding else "none"
            say(
                console,
                f"recorded run of {label(r)}: main finding {finding}; mean pool concurrency "
                f"intra {fmt(view.intra_concurrency, '.2f')}, inter "
                f"{fmt(view.inter_concurrency, '.2f')}",
            )
    for key, copies in copies_of(result).items():
        if len(copies) < 2:
            continue
        (row,) = [r for _, r in result.table.iterrows() if setting_key(r) == key]
        each = "; ".join(
            f"CPU {','.join(map(str, c['cpus']))}: {fmt(c['per_s'], '.4g')} {rate}, "
            f"p50 {fmt(c['p50_ms'], '.3g')}, p99 {fmt(c['p99_ms'], '.3g')} ms"
            for c in copies
        )
        say(console, f"{label(row)}, each copy: {each}")
    for w in result.warnings:
        say(console, f"warning: {w}")
    for line in recommendation(result):
        say(console, line)
    if result.predicted is not None:
        repeat = int(result.options.get("repeat", 1))
        for line in result.predicted.lines(result.recommended, repeat):
            say(console, line)


def _pool_value(value: Any) -> str:
    return "-" if is_missing(value) else "0=TF" if value == 0 else str(int(value))


def _knob_columns(table: pd.DataFrame) -> list[str]:
    """The table's columns beyond the pools: one per variable swept, and cpus if pinned."""
    return env_columns(table) + (["cpus"] if "cpus" in table.columns else [])


def _crossed(table: pd.DataFrame) -> str:
    """``4 settings: intra 1,2 x OMP_NUM_THREADS 1,2``: how many, and the knobs that vary."""
    varied = []
    for name in setting_columns(table):
        values = list(dict.fromkeys(_cell(r, name) for _, r in table.iterrows()))
        if len(values) > 1:
            varied.append(f"{name} {','.join(values)}")
    n = len(table)
    return f"{n} setting{'s' * (n != 1)}" + (f": {' x '.join(varied)}" if varied else "")


def _knob_cells(row: pd.Series, knobs: list[str]) -> list[str]:
    return [_cell(row, k) for k in knobs]


def _cell(row: pd.Series, name: str) -> str:
    """One knob of a row: a pool's size, the CPUs (``all``: not pinned), a variable's value
    (``unset``: removed)."""
    value = row[name]
    if name in ("intra", "inter", "instances", "cores"):
        return _pool_value(value)
    if is_missing(value):
        return "all" if name == "cpus" else "unset"
    return str(_clean(value))


def _nest_env(row: dict[str, Any]) -> dict[str, Any]:
    """A row as sweep.json writes it: its variables (columns in capitals) in one ``env``
    dict, where the first of them stood."""
    names = [k for k in row if ENV_NAME.fullmatch(k)]
    if not names:
        return row
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k == names[0]:
            out["env"] = {n: row[n] for n in names}
        if k not in names:
            out[k] = v
    return out


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
    latency = result.shows_latency
    rate = _rate_name(result)

    def shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A plain loop's rows as they always were; else ``per_s`` named by what it counts."""
        if not latency:
            drop = {*FIGURE_COLUMNS, "server"}
            return [{k: x for k, x in row.items() if k not in drop} for row in rows]
        names = {"per_s": rate, **({"steps": "requests"} if result.server else {})}
        return [{names.get(k, k): x for k, x in row.items()} for row in rows]

    table = [_nest_env(row) for row in shown(records(result.table))]
    copies = copies_of(result)
    for row, (_, r) in zip(table, result.table.iterrows(), strict=True):
        if setting_key(r) in copies:
            row["copies"] = shown(copies[setting_key(r)])
        view = result.recorded.get(setting_key(r))
        if view is not None:
            row["intra_concurrency"] = view.intra_concurrency
            row["inter_concurrency"] = view.inter_concurrency
            row["main_finding"] = view.finding.id if view.finding else None
            row["concurrency_over"] = view.concurrency_over
            row["recorded_run"] = where(view.path)
    runs = [
        _nest_env(r)
        for r in shown(records(result.runs.drop(columns=["intra_calls", "inter_calls"])))
    ]
    for run in runs:
        run["path"] = where(run["path"])
        if isinstance(run.get("copies"), list):
            run["copies"] = [{**c, "path": where(c["path"])} for c in shown(run["copies"])]
    head: dict[str, Any] = {
        "target": result.target,
        "cpus": result.cpus,
        "unit": result.unit,
    }
    if latency:
        head.update(
            workload="server" if result.server else "loop",
            objective=result.objective.value,
            decided_by=measure_words(result),
        )
    return {
        **head,
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
        "runs": runs,
        "predicted": _predicted_json(result),
    }


def _predicted_json(result: SweepResult) -> dict[str, Any] | None:
    """``sweep --predict``: the grid, each setting's prediction, which were timed, in words."""
    if result.predicted is None:
        return None
    return result.predicted.to_json(result.recommended, int(result.options.get("repeat", 1)))


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
    return Setting.from_json(row).to_json()


def plot(result: SweepResult, path: Path) -> Path:
    """Speedup against intra-op threads, one line per value of the other knobs (inter-op,
    variables, CPUs), with the ideal line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result.table
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    if result.instances:
        return _plot_instances(result, path, fig, ax, plt)
    settings = [setting_of(r) for _, r in t.iterrows()]
    # TF's default intra-op pool: one thread per CPU the process may use
    x_of = [s.intra or s.cpus or result.cpus for s in settings]
    # one line per setting of everything but the intra-op pool
    lines = [" · ".join(s.words()[1:]) for s in settings]
    for line, rows in t.assign(x=x_of, line=lines).groupby("line", sort=False):
        rows = rows.sort_values("x")
        ax.errorbar(
            rows["x"],
            rows["speedup"],
            yerr=[rows["speedup"] - rows["speedup_lo"], rows["speedup_hi"] - rows["speedup"]],
            marker="o",
            capsize=3,
            label=line,
        )
    i = int(t.index[t["is_baseline"]][0])
    base, base_x = t.loc[i], x_of[i]
    xs = sorted(set(x_of))
    cores = settings[i].cpus or result.cpus  # the baseline's: what its threads could use
    ax.plot(xs, [min(x, cores) / base_x for x in xs], ":", color="grey", label="ideal")
    ax.axvline(result.cpus, color="black", linewidth=0.8, linestyle="--")
    ax.text(result.cpus, ax.get_ylim()[1], f" {result.cpus} CPUs", va="top", fontsize=8)
    ax.set_xlabel("intra-op threads")
    gain = f"gain in {measure_words(result)}" if result.shows_latency else "speedup"
    if settings[i].env_vars or settings[i].cpus is not None:  # too long for the axis
        ax.set_ylabel(f"{gain} over the baseline")
        ax.set_title(f"baseline: {label(base)}", fontsize=9)
    else:
        ax.set_ylabel(f"{gain} over {label(base)}")
    return _save(fig, ax, plt, xs, path)


def _save(fig: Any, ax: Any, plt: Any, xs: list[int], path: Path) -> Path:
    """Both plots' finish: ticks at the measured values, legend, grid, written and closed."""
    ax.set_xticks(xs)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_output(path) as f:
        fig.savefig(f, format=path.suffix.lstrip(".") or None)
    plt.close(fig)
    return path


def _plot_instances(result: SweepResult, path: Path, fig: Any, ax: Any, plt: Any) -> Path:
    """The gain on the objective against the instance count, one line per pool setting
    (by its place among each count's settings), with the no-gain line."""
    t = result.table.assign(n=result.table.groupby("instances").cumcount())
    for _, rows in t.groupby("n"):
        rows = rows.sort_values("instances")
        shared = (rows["intra"] == rows["cores"]).all() and (rows["inter"] == rows["cores"]).all()
        first = setting_of(rows.iloc[0])
        pools = (
            "pools = each copy's cores"
            if shared
            else f"intra {_pool_value(first.intra)} · inter {_pool_value(first.inter)}"
        )
        ax.errorbar(
            rows["instances"].astype(float),
            rows["speedup"],
            yerr=[rows["speedup"] - rows["speedup_lo"], rows["speedup_hi"] - rows["speedup"]],
            marker="o",
            capsize=3,
            label=pools,
        )
    xs = sorted({int(k) for k in t["instances"]})
    ax.plot(xs, [1.0] * len(xs), ":", color="grey", label="no gain")
    base = t[t["is_baseline"]].iloc[0]
    ax.set_xlabel("instances (copies at once, each on its own cores)")
    ax.set_ylabel(f"gain in {measure_words(result)}")
    ax.set_title(f"against {label(base)}", fontsize=9)
    return _save(fig, ax, plt, xs, path)
