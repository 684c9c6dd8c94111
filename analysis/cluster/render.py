"""A ``ClusterAnalysis`` as terminal text: the hosts, step time per worker, the straggler,
the findings, and the pools of every host side by side. Host names, hostnames and paths are
the jobs' own: every cell and line goes through ``printable`` (no escape sequence, no line of
a name's making)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.cluster.cross import clock_verdict, pools_side_by_side
from tftrace.analysis.render.formatting import fmt, printable

if TYPE_CHECKING:
    from tftrace.analysis.cluster.analyze import ClusterAnalysis


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    rows = [tuple(map(printable, r)) for r in rows]
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    return [line.format(*header), *(line.format(*r) for r in rows)]


def cluster_text(c: ClusterAnalysis) -> str:
    out = [f"{c.path}: {len(c.hosts)} hosts"]
    if c.lost:
        out[0] += f"; missing: {', '.join(c.lost)} (no data to analyse)"
    for h in c.hosts:
        state = f"no analysis: {h.error}" if h.error else h.window
        if h.died or h.failed:
            state = f"{h.ending()}; {state}"
        out.append(f"  {h.name}  {h.hostname or '-'}  {fmt(h.usable_cpus)} CPUs  {state}")
    out += ["", "step time per worker (medians over matched steps, ms)"]
    out += _table(
        ("host", "steps", "step", "period", "collective", "wait", "own", "between steps"),
        [
            (
                str(r.host),
                str(r.steps),
                *(
                    fmt(v, ".1f")
                    for v in (
                        r.step_ms,
                        r.period_ms,
                        r.collective_ms,
                        r.wait_ms,
                        r.own_ms,
                        r.between_steps_ms,
                    )
                ),
            )
            for r in c.workers.itertuples()
        ],
    )
    out += ["", f"clocks: {clock_verdict(c.clocks)}"]
    out += _table(
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
    )
    out += ["", "findings"]
    found = [[f"  [{f.severity.value}] {f.message}", f"      -> {f.action}"] for f in c.findings]
    out += [line for lines in found for line in lines] or ["  none"]
    pools = pools_side_by_side(c.hosts)
    out += ["", "pools per host"]
    out += _table(
        ("host", "pool", "threads", "mean", "peak"),
        [
            (str(r.host), str(r.pool), fmt(r.threads), fmt(r.mean, ".2f"), fmt(r.peak))
            for r in pools.itertuples()
        ],
    )
    return "\n".join(map(printable, out))
