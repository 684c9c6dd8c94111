"""A ``RunDiff`` shown: terminal text (rich tables, as the other commands print) and a small
self-contained HTML page. Nothing is computed here.

Both are built from the same ``tables`` (``render.table.Table``: a title, headers and rows of
plain text). Op, annotation and finding texts come from the user's trace: the terminal prints
them as text (``print_table`` / ``console.say``: printable, never rich markup) and the page
only escaped (``html_table`` / ``esc``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tftrace.analysis.render.console import capture, say
from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.formatting import fmt, is_missing
from tftrace.analysis.render.html import page
from tftrace.analysis.render.table import Table, html_table, print_table

if TYPE_CHECKING:
    from rich.console import Console

    from tftrace.analysis.diff.result import RunDiff
    from tftrace.analysis.diff.sweep_dir import SweepDiff


def _change(value: float, spec: str) -> str:
    if is_missing(value):
        return "-"
    return "0" if value == 0 else format(value, "+" + spec)


def _figure_spec(figure: str) -> str:
    return ".0f" if figure in ("threads", "peak concurrency") else ".2f"


def _interval(interval: tuple[float, float] | None) -> str:
    return "-" if interval is None else f"{interval[0]:.3f}-{interval[1]:.3f}"


def headline(d: RunDiff) -> list[str]:
    """The runs, their windows, and the step-time verdict in words."""
    st = d.step_time
    lines = [
        f"A  {d.a.run.path}  {d.a.window_basis}",
        f"B  {d.b.run.path}  {d.b.window_basis}",
    ]
    medians = f"step time: median {fmt(st.a.median_ms, '.2f')} ms in A, "
    medians += f"{fmt(st.b.median_ms, '.2f')} ms in B"
    if st.speedup is not None:
        medians += f", speedup {st.speedup:.3f}x (median A / median B)"
    lines.append(medians)
    lines.append(f"verdict: {st.reason}")
    if st.per_step_verdict is not None:
        lines.append(f"(the per-step test alone: {st.per_step_verdict})")
    return lines


def tables(d: RunDiff) -> list[Table]:
    """Every table of the comparison, as text cells."""
    st = d.step_time
    out = [
        Table(
            "step time (ms, steady steps)",
            ("run", "steps", "median", "IQR", "p10", "p25", "p75", "p90"),
            [
                (
                    side,
                    str(s.steps),
                    *(
                        fmt(v, ".2f")
                        for v in (s.median_ms, s.iqr_ms, s.p10_ms, s.p25_ms, s.p75_ms, s.p90_ms)
                    ),
                )
                for side, s in (("A", st.a), ("B", st.b))
            ],
        ),
        Table(
            "step time = busy thread-time / threads busy (medians per step; B / A)",
            ("factor", "A", "B", "ratio", "p", "95 % interval", "significant"),
            [
                (
                    name,
                    fmt(c.a_median, ".2f"),
                    fmt(c.b_median, ".2f"),
                    fmt(c.ratio, ".3f"),
                    fmt(c.p_value, ".2g"),
                    _interval(c.interval),
                    "yes" if c.significant else "no",
                )
                for name, c in (
                    ("threads busy", d.factors.parallelism),
                    ("busy thread-ms", d.factors.busy_time),
                )
            ],
            text_columns=1,
        ),
        Table(
            "pools",
            ("pool", "figure", "A", "B", "change"),
            [
                (
                    str(r.pool),
                    str(r.figure),
                    fmt(r.a, _figure_spec(r.figure)),
                    fmt(r.b, _figure_spec(r.figure)),
                    _change(r.change, _figure_spec(r.figure)),
                )
                for r in d.pools.itertuples()
            ],
            text_columns=2,
        ),
        Table(
            "where the wall time went (share of the window, ms per step)",
            ("category", "A share", "B share", "A ms/step", "B ms/step", "change"),
            [
                (
                    str(r.category),
                    fmt(r.a_share, ".1%"),
                    fmt(r.b_share, ".1%"),
                    fmt(r.a_ms_per_step, ".2f"),
                    fmt(r.b_ms_per_step, ".2f"),
                    _change(r.change_ms_per_step, ".2f"),
                )
                for r in d.breakdown.itertuples()
            ],
        ),
        Table(
            "op types that changed most (ms per step; parallelism: Eigen workers busy per op)",
            ("op type", "A ms/step", "B ms/step", "change", "A par.", "B par.", "change"),
            [
                (
                    str(r.op_type),
                    fmt(r.a_ms_per_step, ".2f"),
                    fmt(r.b_ms_per_step, ".2f"),
                    _change(r.change_ms_per_step, ".2f"),
                    fmt(r.a_parallelism, ".2f"),
                    fmt(r.b_parallelism, ".2f"),
                    _change(r.change_parallelism, ".2f"),
                )
                for r in d.ops.itertuples()
            ],
        ),
    ]
    if not d.findings.empty:
        out.append(
            Table(
                "findings",
                ("status", "finding", "pool", "severity", "message"),
                [
                    (r.status, r.id, fmt(r.pool), r.severity, r.message)
                    for r in d.findings.itertuples()
                ],
                text_columns=5,
            )
        )
    out.append(
        Table(
            "what differs in the manifests",
            ("what", "A", "B"),
            [(r.what, r.a, r.b) for r in d.manifest.itertuples()],
            text_columns=3,
        )
    )
    return out


def render(d: RunDiff, out: Console | None = None) -> None:
    """Print the comparison on ``out`` (default: stdout)."""
    console = out or make_console()
    for line in headline(d):
        say(console, line)
    for table in tables(d):
        print_table(console, table)
    for line in d.notes:
        say(console, f"note: {line}")


def sweep_table(sd: SweepDiff) -> Table:
    """One row per recorded setting, against the recorded baseline."""
    return Table(
        f"each recorded setting against the baseline ({sd.baseline})",
        ("setting", "steps", "median ms", "speedup", "p", "verdict", "inter mean", "intra mean"),
        [
            (
                str(r.setting),
                str(r.steps),
                fmt(r.median_ms, ".2f"),
                fmt(r.speedup, ".3f"),
                fmt(r.p_value, ".2g"),
                str(r.verdict),
                fmt(r.inter_op_mean, ".2f"),
                fmt(r.intra_op_mean, ".2f"),
            )
            for r in sd.table.itertuples()
        ],
        text_columns=1,
    )


def render_sweep(sd: SweepDiff, out: Console | None = None) -> None:
    """The sweep's summary table, then each setting's whole comparison."""
    console = out or make_console()
    say(console, f"sweep {sd.path}")
    print_table(console, sweep_table(sd))
    for label, d in sd.diffs.items():
        console.print()
        say(console, f"{label} against {sd.baseline}")
        render(d, console)


def sweep_text(sd: SweepDiff) -> str:
    """``render_sweep`` as plain text (what ``print(sweep_diff)`` shows)."""
    return capture(lambda out: render_sweep(sd, out))


def diff_text(d: RunDiff) -> str:
    """The terminal text as plain text (what ``print(run_diff)`` shows)."""
    return capture(lambda out: render(d, out))


def diff_page(d: RunDiff) -> str:
    """The comparison as one self-contained HTML page (inline CSS, no script, no fetch);
    every string that is not tftrace's own goes through ``esc``."""
    return page(f"tftrace diff: {d.a.run.path} -> {d.b.run.path}", _diff_body(d))


def sweep_page(sd: SweepDiff) -> str:
    """A sweep's settings compared, as one self-contained HTML page."""
    from tftrace.analysis.render.html_sections import esc

    body = html_table(sweep_table(sd), title_tag="h2")
    for i, (label, d) in enumerate(sd.diffs.items()):
        body += f"<h2>{esc(label)} against {esc(sd.baseline)}</h2>" + _diff_body(d, f"s{i}-")
    return page(f"tftrace diff: sweep {sd.path}", body)


def _diff_body(d: RunDiff, prefix: str = "") -> str:
    from tftrace.analysis.render.html_sections import esc, note, section

    head = "".join(f"<p>{esc(line)}</p>" for line in headline(d))
    body = "".join(section(prefix + _anchor(t.title), t.title, html_table(t)) for t in tables(d))
    return head + body + "".join(note(f"note: {line}") for line in d.notes)


def _anchor(title: str) -> str:
    return "-".join(title.split("(")[0].split())


__all__: Sequence[str] = ("diff_page", "diff_text", "render", "render_sweep", "tables")
