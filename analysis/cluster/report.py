"""A ``ClusterAnalysis`` as one self-contained HTML page (``tftrace report DIR``): the hosts
and how each ended, with a link to each host's own report, step time per worker, the
straggler, the findings, the clocks and every host's pools side by side.

Host names, paths, finding texts and exception messages come from the job (its TF_CONFIG, its
code, its trace): they reach the page only through ``esc`` (``html.escape``), as in every
other page of tftrace. Nothing is computed here: every figure is the ``ClusterAnalysis``'s.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tftrace.analysis.cluster.cross import clock_verdict, pools_side_by_side
from tftrace.analysis.cluster.render import host_state
from tftrace.analysis.render.formatting import fmt, is_missing
from tftrace.analysis.render.html import page
from tftrace.analysis.render.html_sections import esc, findings_section, note, section
from tftrace.analysis.render.table import Cell, Link, Table, html_cell, html_pairs, html_table

if TYPE_CHECKING:
    from tftrace.analysis.cluster.analyze import ClusterAnalysis
    from tftrace.analysis.cluster.host import HostSummary

# column -> header, for the cross-host tables (a column not named here shows as it is called)
HEADERS = {
    "host": "host",
    "steps": "steps",
    "step_ms": "step ms",
    "period_ms": "period ms",
    "collective_ms": "collective ms",
    "wait_ms": "wait ms",
    "own_ms": "own ms",
    "between_steps_ms": "between steps ms",
    "same_clock": "one clock",
    "synchronised": "synchronised",
    "est_error_ms": "est. error ms",
    "step_end_gap_ms": "step-end gap ms",
    "pool": "pool",
    "threads": "threads",
    "mean": "mean",
    "peak": "peak",
}
SECTIONS = (
    ("hosts", "Hosts"),
    ("workers", "Step time per worker"),
    ("straggler", "Straggler"),
    ("findings", "Findings"),
    ("clocks", "Clocks"),
    ("pools", "Pools per host"),
    ("each-host", "Each host"),
)


def cell(value: Any, spec: str = ".2f") -> str:
    """A table value as text: yes/no, '-' where missing, ``spec`` for fractional numbers."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if is_missing(value):
        return "-"
    if isinstance(value, numbers.Integral):
        return str(value)
    return fmt(value, spec) if isinstance(value, numbers.Real) else str(value)


def frame_table(df: pd.DataFrame, headers: Mapping[str, str] = HEADERS, text: int = 1) -> str:
    """A DataFrame as an escaped HTML table: its columns in order, named by ``headers``."""
    rows = [[cell(v) for v in row] for row in df.itertuples(index=False)]
    names = tuple(headers.get(c, c) for c in df.columns)
    return html_table(Table("", names, rows, text_columns=text))


def _link(h: HostSummary, reports: Mapping[str, str], problems: Mapping[str, str]) -> Cell:
    """A link to the host's report; else why there is none (once: a host without analysis
    says why beside it)."""
    if h.name in reports:
        return Link(f"{h.name} report", reports[h.name])
    if h.error:
        return "no report"
    return f"no report: {problems.get(h.name, 'not written')}"


HOST_HEADERS = ("host", "machine", "CPUs", "ended", "analysed", "report")


def hosts_section(
    c: ClusterAnalysis, reports: Mapping[str, str], problems: Mapping[str, str]
) -> str:
    """One row per host: its machine, CPUs, how its workload ended, its report."""
    rows = [
        (
            h.name,
            h.hostname or "-",
            fmt(h.usable_cpus),
            "died" if h.died else "raised" if h.failed else fmt(h.status),
            host_state(h),
            _link(h, reports, problems),
        )
        for h in c.hosts
    ]
    lost = (f"missing: {', '.join(c.missing)}: named by the job's cluster spec, no directory",)
    table = Table(
        "",
        HOST_HEADERS,
        rows,
        text_columns=len(HOST_HEADERS),
        notes=lost if c.missing else (),
        nowrap=(0, 1, 2, 3, 5),  # the state may wrap; names, counts and links do not
        draw_empty=True,
    )
    return html_table(table)


def straggler_section(c: ClusterAnalysis) -> str:
    s = c.straggler
    if s is None:
        return note(
            "none: no worker leads the others' own time per step by enough, in enough of the "
            "matched steps (or fewer than two hosts have steps)",
            "none",
        )
    pairs = [
        ("host", str(s["host"])),
        ("lead", f"{fmt(s['lead_ms'], '.1f')} ms of its own time per step over the others"),
        ("slowest in", f"{fmt(s['slowest_share'], '.0%')} of the matched steps"),
        ("the others wait", f"{fmt(s['others_wait_ms'], '.1f')} ms per step in collectives"),
        ("step period", f"{fmt(s['period_ms'], '.1f')} ms (median)"),
    ]
    return html_pairs(pairs)


def each_host_section(
    c: ClusterAnalysis, reports: Mapping[str, str], problems: Mapping[str, str]
) -> str:
    """Each host's headline and its own findings, in one line each; the rest in its report."""
    out = []
    for h in c.hosts:
        lines = [f"<h3>{esc(h.name)}</h3><p>{html_cell(_link(h, reports, problems))}</p>"]
        if h.error:
            lines.append(note(f"no analysis: {h.error}"))
        lines += [f"<p>{esc(line)}</p>" for line in h.headline]
        found = [f"<li>[{esc(f.get('severity'))}] {esc(f.get('message'))}</li>" for f in h.findings]
        if found:
            lines.append(f"<ul>{''.join(found)}</ul>")
        elif not h.error:
            lines.append(note("no findings on this host", "none"))
        out.append("".join(lines))
    return "".join(out)


def cluster_page(
    c: ClusterAnalysis,
    reports: Mapping[str, str] | None = None,
    problems: Mapping[str, str] | None = None,
) -> str:
    """The page. ``reports``: host -> its report's address relative to this page;
    ``problems``: host -> why it has no report (one line)."""
    reports, problems = reports or {}, problems or {}
    workers = frame_table(c.workers) + note(
        "Medians over the steps every host has. wait: time in collective ops beyond the "
        "host that waited least (waiting for the others); own: the step period less the "
        "collective time (computing, Python between steps, descheduled)."
    )
    bodies = {
        "hosts": hosts_section(c, reports, problems),
        "workers": workers,
        "straggler": straggler_section(c),
        "findings": findings_section(c.findings),
        "clocks": note(clock_verdict(c.clocks)) + frame_table(c.clocks),
        "pools": frame_table(pools_side_by_side(c.hosts), text=2),
        "each-host": each_host_section(c, reports, problems),
    }
    nav = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in SECTIONS)
    sections = "".join(section(a, t, bodies[a]) for a, t in SECTIONS)
    head = f"<p>{esc(len(c.hosts))} hosts" + (
        f"; without data: {esc(', '.join(c.lost))}</p>" if c.lost else "</p>"
    )
    return page(f"tftrace report: {c.path}", f"<nav>{nav}</nav>{head}{sections}")
