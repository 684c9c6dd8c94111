"""A ``ClusterDiff`` shown: terminal text (rich tables, as a single run's) and a self-contained
HTML page, both from the same ``Table`` values. Host names, paths and reasons come from the
jobs: the page shows them only escaped (``html_table`` / ``esc``), the terminal as text
(``print_table`` / ``console.say``: printable, never rich markup). Nothing is computed here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tftrace.analysis.diff.render import headline, tables
from tftrace.analysis.render.console import capture, say
from tftrace.analysis.render.formatting import fmt
from tftrace.analysis.render.html import page
from tftrace.analysis.render.html_sections import esc, note, section
from tftrace.analysis.render.table import Table, html_pairs, html_table, print_table

if TYPE_CHECKING:
    from rich.console import Console

    from tftrace.analysis.cluster.analyze import ClusterAnalysis
    from tftrace.analysis.cluster.diff import ClusterDiff

HOSTS_TITLE = "each host, B against A (its step calls; each whole comparison: --json, --html)"
HOSTS_HEADERS = ("host", "verdict", "speedup", "A median ms", "B median ms", "p")
WORKERS_TITLE = "workers (medians over each job's matched steps, ms)"
WORKERS_HEADERS = (
    "host",
    "step A",
    "step B",
    "period A",
    "period B",
    "wait A",
    "wait B",
    "own A",
    "own B",
)


def _side(c: ClusterAnalysis) -> str:
    who = f"straggler {c.straggler['host']}" if c.straggler else "no straggler"
    lost = f"; without data: {', '.join(c.lost)}" if c.lost else ""
    return f"{c.path}  ({len(c.hosts)} hosts; {who}{lost})"


def job_lines(d: ClusterDiff) -> list[str]:
    """Both jobs, the job's step period and its verdict, the hosts one side lacks."""
    st = d.job
    period = f"job step period: median {fmt(st.a.median_ms, '.2f')} ms in A, "
    period += f"{fmt(st.b.median_ms, '.2f')} ms in B"
    if st.speedup is not None:
        period += f", speedup {st.speedup:.3f}x (median A / median B)"
    lines = [f"A  {_side(d.a)}", f"B  {_side(d.b)}", period, f"verdict: {st.reason}"]
    if d.only_a:
        lines.append(f"hosts only in A: {', '.join(d.only_a)}")
    if d.only_b:
        lines.append(f"hosts only in B: {', '.join(d.only_b)}")
    return lines


def hosts_table(d: ClusterDiff) -> Table:
    """Each host's verdict; the hosts not compared, and why, as notes."""
    rows = [
        (
            str(r.host),
            str(r.verdict),
            fmt(r.speedup, ".3f"),
            fmt(r.a_median_ms, ".2f"),
            fmt(r.b_median_ms, ".2f"),
            fmt(r.p_value, ".2g"),
        )
        for r in d.hosts.itertuples()
    ]
    problems = tuple(f"{host} not compared: {why}" for host, why in d.problems.items())
    # as wide as its title: a title wraps at the width of its table
    wide = {"min_width": len(HOSTS_TITLE)}
    return Table(HOSTS_TITLE, HOSTS_HEADERS, rows, text_columns=2, notes=problems, options=wide)


def workers_table(d: ClusterDiff) -> Table:
    rows = [
        (str(r[0]), *(fmt(v, ".1f") for v in r[1:]))
        for r in d.workers.itertuples(index=False, name=None)
    ]
    return Table(WORKERS_TITLE, WORKERS_HEADERS, rows)


def straggler_line(c: ClusterAnalysis) -> str:
    s: dict[str, Any] | None = c.straggler
    if s is None:
        return "none"
    return (
        f"{s['host']}: {fmt(s['lead_ms'], '.1f')} ms more of its own time per step than the "
        f"others (slowest in {fmt(s['slowest_share'], '.0%')} of steps); they wait "
        f"{fmt(s['others_wait_ms'], '.1f')} ms per step in collectives"
    )


def render(d: ClusterDiff, out: Console) -> None:
    for line in job_lines(d):
        say(out, line)
    print_table(out, hosts_table(d))
    print_table(out, workers_table(d))
    for line in ("straggler", f"  A: {straggler_line(d.a)}", f"  B: {straggler_line(d.b)}"):
        say(out, line)


def cluster_diff_text(d: ClusterDiff) -> str:
    """What ``print(cluster_diff)`` and ``tftrace diff DIR_A DIR_B`` show."""
    return capture(lambda out: render(d, out))


def cluster_diff_page(d: ClusterDiff) -> str:
    """The comparison as one self-contained page: the job's verdict, each host's verdict, the
    workers, the stragglers, then each host's whole comparison."""
    pairs = [("A", straggler_line(d.a)), ("B", straggler_line(d.b))]
    body = "".join(f"<p>{esc(line)}</p>" for line in job_lines(d))
    body += section("hosts", HOSTS_TITLE, html_table(hosts_table(d)))
    body += section("workers", WORKERS_TITLE, html_table(workers_table(d)))
    body += section("straggler", "straggler", html_pairs(pairs))
    for i, (name, run_diff) in enumerate(d.diffs.items()):
        parts = "".join(f"<p>{esc(line)}</p>" for line in headline(run_diff))
        parts += "".join(html_table(t, title_tag="h3") for t in tables(run_diff))
        parts += "".join(note(f"note: {line}") for line in run_diff.notes)
        body += section(f"host-{i}", f"{name}: B against A", parts)
    return page(f"tftrace diff: {d.a.path} -> {d.b.path}", body)
