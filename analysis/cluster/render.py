"""A ``ClusterAnalysis`` as terminal text: the hosts, step time per worker, the clocks, the
findings, and the pools of every host side by side, as rich tables like a single run's report.
Host names, hostnames and paths are the jobs' own: every line and cell reaches the terminal
as text (``console.say``, ``print_table``: printable, never rich markup)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.cluster.cross import clock_verdict, pools_side_by_side
from tftrace.analysis.render.console import capture, say
from tftrace.analysis.render.formatting import fmt
from tftrace.analysis.render.table import Table, print_table

if TYPE_CHECKING:
    from rich.console import Console

    from tftrace.analysis.cluster.analyze import ClusterAnalysis
    from tftrace.analysis.cluster.host import HostSummary

WORKER_FIGURES = ("step_ms", "period_ms", "collective_ms", "wait_ms", "own_ms", "between_steps_ms")


def host_state(h: HostSummary) -> str:
    """How the host's workload ended, where that is news, and its window or why none."""
    state = f"no analysis: {h.error}" if h.error else h.window
    if h.died or h.failed:
        state = f"{h.ending()}; {state}"
    return state


def tables(c: ClusterAnalysis) -> list[Table]:
    """The job's tables, as text cells: hosts, workers, clocks, pools."""
    return [
        Table(
            "hosts",
            ("host", "machine", "CPUs", "state"),
            [(h.name, h.hostname or "-", fmt(h.usable_cpus), host_state(h)) for h in c.hosts],
            text_columns=2,
            text_at=(3,),
        ),
        Table(
            "step time per worker (medians over matched steps, ms)",
            ("host", "steps", "step", "period", "collective", "wait", "own", "between steps"),
            [
                (str(r.host), str(r.steps), *(fmt(getattr(r, f), ".1f") for f in WORKER_FIGURES))
                for r in c.workers.itertuples()
            ],
        ),
        Table(
            "clocks",
            ("host", "one clock", "synchronised", "est. error ms", "step-end gap ms"),
            [
                (
                    str(r.host),
                    "yes" if r.same_clock else "no",
                    {True: "yes", False: "no"}.get(r.synchronised, "-"),
                    fmt(r.est_error_ms, ".1f"),
                    fmt(r.step_end_gap_ms, ".2f"),
                )
                for r in c.clocks.itertuples()
            ],
            notes=(clock_verdict(c.clocks),),
        ),
        Table(
            "pools per host",
            ("host", "pool", "threads", "mean", "peak"),
            [
                (str(r.host), str(r.pool), fmt(r.threads), fmt(r.mean, ".2f"), fmt(r.peak))
                for r in pools_side_by_side(c.hosts).itertuples()
            ],
            text_columns=2,
        ),
    ]


def render(c: ClusterAnalysis, out: Console) -> None:
    hosts, workers, clocks, pools = tables(c)
    say(out, f"{c.path}: {len(c.hosts)} hosts")
    if c.lost:  # a line of its own: a long path wraps, the hosts' names stay together
        say(out, f"missing: {', '.join(c.lost)} (no data to analyse)")
    for table in (hosts, workers, clocks):
        print_table(out, table)
    say(out, "findings" if c.findings else "findings: none")
    for f in c.findings:
        say(out, f"  [{f.severity.value}] {f.message}")
        say(out, f"      -> {f.action}")
    print_table(out, pools)


def cluster_text(c: ClusterAnalysis) -> str:
    """What ``print(cluster)`` and ``tftrace analyze DIR`` show."""
    return capture(lambda out: render(c, out)).rstrip("\n")
