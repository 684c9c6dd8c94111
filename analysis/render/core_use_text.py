"""The core-use headline in words, for the terminal and the HTML report, and the rules a run
could not check. Nothing is computed here: ``metrics/core_use.py`` did that."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.predict.result import RECOMMEND_GAIN
from tftrace.analysis.render.formatting import printable
from tftrace.analysis.render.html_sections import esc, note
from tftrace.analysis.render.table import Table, html_table

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

HEADERS = ("idle core-time went to", "core-s", "share")


def headline(analysis: Analysis) -> list[str]:
    """One or two lines: X of N cores busy, and the most thread settings could gain; none
    without core-use figures."""
    use = analysis.core_use
    if use is None:
        return []
    source = "kernel CPU time" if use.busy_source == "os sampler" else "busy by the trace"
    if not use.cores:
        return [
            f"core use: {use.mean_busy:.2f} cores busy on average ({source}); of how many is "
            f"unknown ({use.cores_basis})"
        ]
    assumed = "" if use.cores_basis == "usable CPUs" else f" ({use.cores_basis})"
    lines = [
        f"core use: the process kept {use.mean_busy:.2f} of {use.cores} usable cores busy "
        f"({use.mean_busy / use.cores:.0%}, {source}){assumed}"
    ]
    if use.max_speedup is not None:
        lines.append(
            f"thread settings could make this window at most {use.max_speedup:.1f}x faster "
            f"({use.fixed_share:.0%} of it is Python or input waits, which no setting shortens)"
        )
        lines += pace_lines(analysis)
    lines += predicted_lines(analysis)
    return lines


def pace_lines(analysis: Analysis) -> list[str]:
    """Under the bound, for a server that ran at two paces (``RequestPace.two_paces``): the
    bound takes the recorded CPU a request as every setting's, which moves with the pace."""
    pace, requests = analysis.request_pace, analysis.requests
    if pace is None or not pace.two_paces or requests is None or requests.throughput <= 0:
        return []
    return [
        f"but its requests ran at two paces (above), the fast one at "
        f"{pace.over(requests.throughput)[1]:.2f}x the window's requests/s with less CPU a "
        "request: the bound takes the recorded CPU a request as every setting's, and a "
        "setting that keeps the requests at the fast pace can pass it (docs/predict.md)"
    ]


def predicted_lines(analysis: Analysis) -> list[str]:
    """The setting predicted best from the trace, under the bound as its ceiling; or why
    none was predicted. Nothing unless predictions were asked for."""
    guess = analysis.prediction
    if guess is None:
        note = analysis.prediction_note
        return [f"predicted: none ({note})"] if note else []
    best = guess.recommended()
    use = analysis.core_use
    ceiling = ""
    if use is not None and use.max_speedup is not None:
        ceiling = f"; the bound above is its ceiling ({use.max_speedup:.1f}x)"
    if best is None:
        need = guess.recommend_gain
        paced = (
            f" (its requests' fast pace alone ran {need:.2f}x the window's: a setting "
            "predicted inside that span may owe it to the pace)"
            if need > RECOMMEND_GAIN
            else ""
        )
        return [
            f"predicted: none of {len(guess.settings)} settings is {need - 1:.0%} "
            f"faster than the run's own (intra {guess.recorded_intra}, inter "
            f"{guess.recorded_inter}){paced}{ceiling}"
        ]
    speedup = best.speedup_label()
    if (
        use is not None
        and use.max_speedup is not None
        and best.bound is None
        and best.speedup > use.max_speedup
    ):
        # the bound holds whatever the model says: the cores cannot do more
        speedup = f"{use.max_speedup:.2f}x (the bound; the replay says {best.speedup:.2f}x)"
    gain = f"{speedup} faster"
    if best.served is not None and guess.server is not None:
        span = best.served_span()
        p99 = (
            f"{span[1].p99_ms:.1f} to {span[0].p99_ms:.1f}" if span else f"{best.served.p99_ms:.1f}"
        )
        gain = f"{speedup} the requests/s, p99 {p99} ms (recorded {guess.server.p99_ms:.1f} ms)"
    return [
        f"predicted best: intra {best.intra}, inter {best.inter}: {gain} "
        f"({best.basis}; {len(guess.settings)} settings predicted){ceiling}"
    ]


def cause_rows(analysis: Analysis) -> list[tuple[str, str, str]]:
    """(cause, core-s, share of the idle core-time) for each cause with any time."""
    use = analysis.core_use
    if use is None or use.causes is None:
        return []
    rows = []
    for r in use.causes.itertuples():
        if r.core_s <= 0:
            continue
        label = str(r.label)
        if r.cause == "dispatch" and use.mean_op_us is not None:
            per = f"{use.ops_per_step:.0f} ops/step" if use.ops_per_step else f"{use.ops} ops"
            label += f" ({per}, {use.mean_op_us:.0f} us each)"
        rows.append((label, f"{r.core_s:.3g}", f"{r.share:.0%}"))
    return rows


def cause_table(analysis: Analysis) -> Table | None:
    """Where the idle core-time went, by cause; None without core use or a cause."""
    rows = cause_rows(analysis)
    return Table("", HEADERS, rows) if rows else None


def beside_lines(analysis: Analysis) -> list[str]:
    """Who else held the process's CPUs (other processes, steal, the quota), in a line or
    two; nothing without the machine readings."""
    held = analysis.contention
    if held is None:
        return []
    others = held.processes[held.processes["role"] != "recorder"].head(3)
    named = ", ".join(
        f"{printable(r.name)} (pid {r.pid}) {r.core_s:.2f}" for r in others.itertuples()
    )
    lines = [
        f"beside it on CPUs {','.join(map(str, held.cpus))}: other processes "
        f"{held.neighbours_core_s:.2f} core-s"
        + (f" ({named})" if named else "")
        + f", tftrace's recorder {held.tftrace_core_s:.2f}, steal {held.steal_core_s:.2f}"
    ]
    if held.quota is not None:
        lines.append(
            f"cgroup quota {held.quota:g} CPUs: throttled in {held.throttled_periods} of "
            f"{held.periods} periods ({held.throttled_core_s:.2f} s)"
        )
    return lines


def not_checked_lines(analysis: Analysis) -> list[str]:
    return [f"not checked: {line}" for line in analysis.not_checked]


def core_use_section(analysis: Analysis) -> str:
    """The report's first section: the headline, the idle causes and where figures came from."""
    use = analysis.core_use
    if use is None:
        return note("no core-use figures for this run")
    parts = [f"<p><b>{esc(line)}</b></p>" for line in headline(analysis)[:1]]
    parts += [note(line) for line in headline(analysis)[1:]]
    causes = cause_table(analysis)
    if causes:
        parts.append(html_table(causes))
    parts += [note(line) for line in beside_lines(analysis)]
    parts += [note(line) for line in use.notes]
    return "".join(parts)


def not_checked_section(analysis: Analysis) -> str:
    if not analysis.not_checked:
        return note("every rule could run on this run", "none")
    return "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in analysis.not_checked) + "</ul>"
