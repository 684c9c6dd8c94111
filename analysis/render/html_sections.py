"""The pieces of the HTML report: escaped tables and one section per part of an Analysis.

Everything that comes from the trace or the run (op, annotation and thread names, paths,
command lines, manifest values, finding texts) is under the user's control: it reaches the
HTML only through ``esc`` (``formatting.html_text``: ``html.escape``, quotes included), in text
and attributes alike.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tftrace.analysis.model.onednn import onednn_text
from tftrace.analysis.render import census_text
from tftrace.analysis.render.formatting import fmt, html_text, is_missing
from tftrace.analysis.render.python_text import not_shown, notes, other_thread_lines, title
from tftrace.analysis.render.report_tables import (
    breakdown_table,
    census_table,
    cpu_table,
    ops_table,
    pools_table,
    python_table,
    queue_delay_table,
)
from tftrace.analysis.render.table import Table, html_pairs, html_table
from tftrace.analysis.render.window_text import (
    profiler_cost_line,
    step_summary_lines,
    steps_line,
    warmup_line,
    window_line,
)

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis
    from tftrace.tracer.manifest_reader import Manifest

MAX_STEP_ROWS = 20
FIGURES = (
    (
        "concurrency",
        "Concurrency over time",
        "Mean number of busy threads per pool in each bin, stacked; the dashed line is the "
        "number of schedulable CPUs. Busy means owning work, not running on a CPU.",
    ),
    (
        "census",
        "Threads on a CPU by pool",
        "Mean number of each pool's threads on a CPU in each bin (the kernel's CPU time, so "
        "pools the trace does not show, like BLAS, count too), stacked; the dashed line is the "
        "number of usable CPUs.",
    ),
    (
        "histograms",
        "Concurrency histograms",
        "For each pool, the fraction of the trace window during which 0, 1, ..., N of its "
        "threads were busy.",
    ),
    (
        "timeline",
        "Thread timeline",
        "The busy intervals of every thread busy in the window, coloured by pool (gaps under "
        "a pixel are closed).",
    ),
    (
        "queue_delay",
        "Queue-delay distribution",
        "For each pool, how long closures waited between being scheduled (Record) and "
        "starting (StartRegion), as a share of the pool's closures; log-spaced bins.",
    ),
    (
        "breakdown",
        "Wall-time breakdown",
        "Each instant of the window in exactly one category (first match wins, see "
        "docs/analyses.md); the whole window, then each step (up to 20).",
    ),
)
# A server's figures, after the others (a loop's report has neither).
REQUEST_FIGURES = (
    (
        "requests_in_flight",
        "Requests in flight over time",
        "Mean number of requests in flight (started, not yet ended) in each bin of the "
        "analysed window, and the requests that ended in each bin, per second.",
    ),
    (
        "request_latency",
        "Request latency distribution",
        "Share of the window's requests per latency bin (log-spaced), per function where there "
        "are several; the dashed lines are p50, p90 and p99 of all requests.",
    ),
)


esc = html_text  # text for the page: everything not written by tftrace itself goes through it


def note(text: str, cls: str = "note") -> str:
    return f'<p class="{cls}">{esc(text)}</p>'


def manifest_pairs(manifest: Manifest) -> list[tuple[str, str]]:
    """What ran and where, from the recorder's manifest."""
    host, exception = manifest.host, manifest.workload.exception
    status = f"{manifest.status} (workload exit code {manifest.workload.exit_code})"
    if exception:
        status += f", {exception.type}: {exception.message}"
    pairs = [
        ("status", status),
        ("command", shlex.join(manifest.workload_command)),
        ("recorded", manifest.created or "-"),
        ("versions", ", ".join(f"{k} {v}" for k, v in manifest.versions.items())),
        (
            "CPUs",
            f"{len(host.cpu_affinity)} schedulable of {host.cpu_count}"
            + (f", quota {host.cpu_quota}" if host.cpu_quota else ""),
        ),
    ]
    for key, info in manifest.pools.items():
        pairs.append((f"{key} pool", f"{info.size} threads (source: {info.source})"))
    for name, source in sorted(manifest.sources.items()):
        reason = f": {source.reason}" if source.reason else ""
        pairs.append((f"source {name}", f"{source.state}{reason}"))
    if manifest.name:
        pairs.insert(0, ("name", manifest.name))
    return pairs


def run_section(analysis: Analysis) -> str:
    run = analysis.run
    pairs = [("path", str(run.path))]
    if run.manifest.exists:
        pairs += manifest_pairs(run.manifest)
    else:
        pairs.append(("manifest", "none: a bare trace (no OS samples, no py-spy, no identity)"))
    kernels = run.events["op_kernel"].cat.remove_unused_categories().cat.categories
    pairs.append(("oneDNN", onednn_text(run.manifest, [str(k) for k in kernels])))
    trace_lo, trace_hi = analysis.trace_window
    pairs.append(("trace", f"{trace_lo / 1e9:.3f} to {trace_hi / 1e9:.3f} s on the run's axis"))
    pairs.append(("analysed", window_line(analysis)))
    warmup = warmup_line(analysis)
    if warmup:
        pairs.append(("warm-up", warmup.removeprefix("warm-up: ")))
    cost = profiler_cost_line(analysis)
    if cost:
        pairs.append(("profiler's cost", cost.removeprefix("profiler's cost: ")))
    pairs += [("note", note) for note in run.notes]
    return html_pairs(pairs)


def attr(finding: object, name: str) -> Any:
    value = getattr(finding, name, None)
    return getattr(value, "value", value)  # Enums (severity, pool) show their value


def css_class(value: object) -> str:
    """A class name from a severity: escaped, and reduced to [a-z0-9-] anyway."""
    return re.sub(r"[^a-z0-9-]", "-", str(value).lower())


def _verification(check: object) -> str:
    """A verified finding's outcome: the advised setting timed beside the run's own."""
    if check is None:
        return ""
    status = fmt(attr(check, "status"))
    return (
        f'<div class="verified {esc(css_class(status))}">verified: {esc(status)}: '
        f"{esc(fmt(attr(check, 'reason')))}</div>"
    )


def _predicted(gain: object) -> str:
    """A finding's advised setting as the trace predicts it."""
    if gain is None:
        return ""
    label = getattr(gain, "label", None)
    text = label() if callable(label) else fmt(gain)
    return f'<div class="predicted">predicted from the trace: {esc(str(text))}</div>'


def finding(finding: object) -> str:
    severity = attr(finding, "severity")
    evidence = getattr(finding, "evidence", None) or {}
    pool = attr(finding, "pool")
    head = (
        f'<span class="sev">{esc(fmt(severity))}</span> '
        f"<code>{esc(fmt(attr(finding, 'id')))}</code>"
        + (f" &middot; {esc(pool)}" if not is_missing(pool) else "")
    )
    rows = [(str(k), fmt(v, ".4g")) for k, v in dict(evidence).items()]
    causes = ", ".join(str(c) for c in getattr(finding, "consequence_of", None) or ())
    return (
        f'<div class="finding sev-{esc(css_class(severity))}">'
        f"<div>{head}</div>"
        f'<div class="msg">{esc(fmt(attr(finding, "message")))}</div>'
        f'<div class="action">{esc(fmt(attr(finding, "action")))}</div>'
        + (
            f'<div class="consequence">a consequence of {esc(causes)}: act on that first</div>'
            if causes
            else ""
        )
        + _predicted(getattr(finding, "predicted", None))
        + _verification(getattr(finding, "verification", None))
        + (html_table(Table("", ("evidence", "value"), rows, text_columns=2)) if rows else "")
        + "</div>"
    )


def findings_section(findings: Sequence[object]) -> str:
    """Findings in the order given (causes first, then most severe first, as the diagnosis
    sorts them)."""
    if not findings:
        return note("no findings", "none")
    return "".join(finding(f) for f in findings)


def pools_section(analysis: Analysis) -> str:
    return html_table(pools_table(analysis)) + note(
        "busy = threads of the pool busy at some moment; mean and peak = busy threads "
        "(owning work, not on a CPU); cores = mean / schedulable CPUs."
    )


def census_section(analysis: Analysis) -> str:
    """Every thread by pool, each pool's size and where it came from, and its CPU use, against
    the usable CPUs (``metrics/census.py``)."""
    census, shown = analysis.census, census_table(analysis, with_sources=True)
    if census is None or shown is None:
        return note("no thread census for this run")
    return (
        note(shown.title, "summary")
        + html_table(shown)
        + "".join(note(line) for line in census_text.summary_lines(analysis))
        + note(
            "threads = known from any source; size = configured, where known (OpenBLAS counts "
            "the calling thread: size N starts N - 1 workers); CPU s and run-queue s from the "
            "kernel over the window; on CPU = CPU s / window s; busy (trace) = threads owning "
            "work by the trace, '-' for a pool the trace does not show."
        )
    )


def breakdown_section(analysis: Analysis) -> str:
    return html_table(breakdown_table(analysis)) + note(
        "Every instant of the window in exactly one category, the first that holds; "
        "the shares add up to 100 %."
    )


def python_section(analysis: Analysis) -> str:
    """Which Python functions took the main thread's time (py-spy), where Python matters."""
    python, shown = analysis.python_time, python_table(analysis, shorten=False)
    if python is None or shown is None:
        return note(not_shown(analysis) or "not analysed")
    lines = [*other_thread_lines(analysis), *notes(analysis)]
    return (
        note(title(analysis), "summary") + html_table(shown) + "".join(note(text) for text in lines)
    )


def queue_delay_section(analysis: Analysis) -> str:
    if analysis.queue_delay.empty:
        return note(
            "No closure has both its Record and its StartRegion in the trace "
            "(TensorFlow 2.16 and older write no thread-pool events)."
        )
    return html_table(queue_delay_table(analysis, units_in_headers=True)) + note(
        "From being scheduled (Record) to starting (StartRegion)."
    )


def cpu_section(analysis: Analysis) -> str:
    if analysis.cpu.empty:
        return note("No OS samples: the kernel's CPU accounting is not available.")
    return html_table(cpu_table(analysis, units_in_headers=True)) + note(
        "CPU and run-queue wait from the kernel (schedstat); busy from the trace."
    )


def ops_section(analysis: Analysis) -> str:
    if analysis.top_ops.empty:
        return note("No op events in the trace.")
    return html_table(ops_table(analysis, shorten=False)) + note(
        "parallelism = Eigen workers busy on the op's behalf, on average; inline = none."
    )


def steps_section(analysis: Analysis) -> str:
    steps, stats = analysis.steps, analysis.step_stats
    if not stats["steps"]:
        if stats["found"]:
            return note(f"No step in the analysed window ({stats['found']} in the trace).")
        return note("No steps found (no tf.function or annotation repeated on the main thread).")
    summary = steps_line(analysis) or ""
    lines = "".join(note(line) for line in step_summary_lines(analysis))
    lo, categories = analysis.window[0], list(analysis.breakdown["category"])
    slowest = steps.table.sort_values("duration_ns", ascending=False, kind="stable")
    rows = [
        (
            str(int(r["step"])),
            f"{(r['start_ns'] - lo) / 1e9:.3f}",
            f"{r['duration_ns'] / 1e6:.2f}",
            *(f"{r[c]:.0%}" for c in categories),
        )
        for _, r in slowest.head(MAX_STEP_ROWS).iterrows()
    ]
    shown = len(rows)
    which = f"The {shown} slowest of {stats['steps']} steps" if shown < stats["steps"] else "Steps"
    more = note(f"{which}, slowest first; every step is in the JSON (tftrace analyze --json).")
    headers = ("step", "start s", "duration ms", *categories)
    return note(summary, "summary") + lines + html_table(Table("", headers, rows)) + more


def figure(name: str, title: str, caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure id="figure-{esc(name)}"><h3>{esc(title)}</h3>'
        f'<img alt="{esc(title)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def figures_section(
    images: Mapping[str, bytes],
    image_dir: str | None,
    figures: Sequence[tuple[str, str, str]] = FIGURES,
) -> str:
    """The known ``figures`` in page order, then any other image given, by name."""
    known = {name for name, _, _ in figures}
    parts = [
        figure(name, title, caption, images[name])
        for name, title, caption in figures
        if name in images
    ]
    parts += [figure(n, n, "", png) for n, png in images.items() if n not in known]
    not_drawn = [title for name, title, _ in figures if name not in images]
    if not_drawn:
        parts.append(note("Not drawn: " + ", ".join(not_drawn) + "."))
    if image_dir:
        parts.append(note(f"The figures are also saved as PNG files in {image_dir}/."))
    return "".join(parts)


def missing_section(analysis: Analysis) -> str:
    missing = list(analysis.run.missing)
    if not analysis.run.manifest.exists:
        missing.insert(0, "manifest, OS samples, py-spy, thread identity: a bare trace has none")
    if not missing:
        return note("Nothing: every source recorded.", "none")
    return "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in missing) + "</ul>"


def section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'
