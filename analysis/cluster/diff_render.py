"""A ``ClusterDiff`` shown: terminal text and a self-contained HTML page, both from the same
rows of plain text. Host names, paths and reasons come from the jobs: the page shows them only
through ``esc`` (``formatting.html_text``), the terminal through ``printable``. Nothing is
computed here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tftrace.analysis.diff.render import headline, tables
from tftrace.analysis.render.formatting import fmt, printable
from tftrace.analysis.render.html import page
from tftrace.analysis.render.html_sections import esc, note, section, table

if TYPE_CHECKING:
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


def host_rows(d: ClusterDiff) -> list[tuple[str, ...]]:
    return [
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


def problem_lines(d: ClusterDiff) -> list[str]:
    return [f"{host} not compared: {why}" for host, why in d.problems.items()]


def worker_rows(d: ClusterDiff) -> list[tuple[str, ...]]:
    return [
        (str(r[0]), *(fmt(v, ".1f") for v in r[1:]))
        for r in d.workers.itertuples(index=False, name=None)
    ]


def straggler_line(c: ClusterAnalysis) -> str:
    s: dict[str, Any] | None = c.straggler
    if s is None:
        return "none"
    return (
        f"{s['host']}: {fmt(s['lead_ms'], '.1f')} ms more of its own time per step than the "
        f"others (slowest in {fmt(s['slowest_share'], '.0%')} of steps); they wait "
        f"{fmt(s['others_wait_ms'], '.1f')} ms per step in collectives"
    )


def _text_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    rows = [tuple(map(printable, r)) for r in rows]
    widths = [max(len(c) for c in col) for col in zip(headers, *rows, strict=True)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*headers).rstrip(), *(line.format(*r).rstrip() for r in rows)]


def cluster_diff_text(d: ClusterDiff) -> str:
    """What ``print(cluster_diff)`` and ``tftrace diff DIR_A DIR_B`` show."""
    out = job_lines(d)
    out += ["", HOSTS_TITLE, *_text_table(HOSTS_HEADERS, host_rows(d)), *problem_lines(d)]
    out += ["", WORKERS_TITLE, *_text_table(WORKERS_HEADERS, worker_rows(d))]
    out += ["", "straggler", f"  A: {straggler_line(d.a)}", f"  B: {straggler_line(d.b)}"]
    return "\n".join(map(printable, out)) + "\n"


def cluster_diff_page(d: ClusterDiff) -> str:
    """The comparison as one self-contained page: the job's verdict, each host's verdict, the
    workers, the stragglers, then each host's whole comparison."""
    hosts = table(HOSTS_HEADERS, host_rows(d), text_columns=2) if len(d.hosts) else ""
    hosts += "".join(note(line) for line in problem_lines(d)) or ("" if hosts else note("none"))
    pairs = [("A", straggler_line(d.a)), ("B", straggler_line(d.b))]
    straggler = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
    body = "".join(f"<p>{esc(line)}</p>" for line in job_lines(d))
    body += section("hosts", HOSTS_TITLE, hosts)
    body += section("workers", WORKERS_TITLE, table(WORKERS_HEADERS, worker_rows(d)))
    body += section(
        "straggler", "straggler", f'<table class="kv"><tbody>{straggler}</tbody></table>'
    )
    for i, (name, run_diff) in enumerate(d.diffs.items()):
        parts = "".join(f"<p>{esc(line)}</p>" for line in headline(run_diff))
        for t in tables(run_diff):
            shown = table(t.headers, t.rows, t.text_columns) if t.rows else note("none", "none")
            parts += f"<h3>{esc(t.title)}</h3>{shown}"
        parts += "".join(note(f"note: {line}") for line in run_diff.notes)
        body += section(f"host-{i}", f"{name}: B against A", parts)
    return page(f"tftrace diff: {d.a.path} -> {d.b.path}", body)
