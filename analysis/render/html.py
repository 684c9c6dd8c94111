"""The HTML report: one self-contained page assembled from an Analysis, figures and findings.

Self-contained means it opens offline and can be mailed as one file: CSS is inline, the
figures are embedded as base64 PNG, and nothing names a URL to fetch. A Content-Security-
Policy forbids scripts and every fetch except the embedded images, so the page stays inert.

Everything that comes from the trace or the run (op, annotation and thread names, paths,
command lines, manifest values, finding texts) is under the user's control: it reaches the
page only through ``esc`` (``html.escape``, quotes included), in text and attributes alike.
Nothing is computed here: every figure is a field of the Analysis or of the run's manifest.
"""

from __future__ import annotations

import base64
import html
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tftrace import __version__
from tftrace.analysis.metrics.breakdown import CATEGORIES
from tftrace.analysis.render.formatting import (
    POOL_HEADERS,
    fmt,
    is_missing,
    parallelism_text,
    pool_rows,
)
from tftrace.analysis.render.terminal import Analysis

MAX_STEP_ROWS = 20
SECTIONS = (
    ("run", "Run"),
    ("findings", "Findings"),
    ("pools", "Pools"),
    ("breakdown", "Where the wall time went"),
    ("queue-delay", "Queue delay"),
    ("cpu", "CPU truth"),
    ("ops", "Top op types"),
    ("steps", "Steps"),
    ("figures", "Figures"),
    ("missing", "Missing"),
)
FIGURES = (
    (
        "concurrency",
        "Concurrency over time",
        "Mean number of busy threads per pool in each bin, stacked; the dashed line is the "
        "number of schedulable CPUs. Busy means owning work, not running on a CPU.",
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
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #1d1d1f; margin: 0; background: #f6f6f8; }
main { max-width: 1148px; margin: 0 auto; padding: 20px 24px 48px; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #e4e4ea; }
h3 { font-size: 15px; margin: 20px 0 6px; }
nav { font-size: 13px; color: #555; }
nav a { color: #2457a6; margin-right: 12px; text-decoration: none; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid #e4e4ea; padding: 4px 10px; text-align: left;
         vertical-align: top; overflow-wrap: anywhere; }
th { background: #f0f0f4; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { background: none; width: 150px; white-space: nowrap; }
code, .mono { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
p.note, p.none { color: #666; }
figure { margin: 16px 0 24px; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #e4e4ea; }
figcaption { color: #555; font-size: 13px; margin-top: 4px; }
.finding { border-left: 5px solid #999; background: #fafafa; padding: 8px 12px; margin: 8px 0; }
.finding .sev { font-weight: 700; text-transform: uppercase; font-size: 12px; }
.finding .msg { font-weight: 600; }
.finding table { margin: 4px 0 0; }
.sev-critical, .sev-error, .sev-high { border-left-color: #c62828; }
.sev-warning, .sev-medium { border-left-color: #ef8f00; }
.sev-info, .sev-low { border-left-color: #2457a6; }
footer { color: #777; font-size: 12px; margin-top: 40px; }
"""


def esc(value: object) -> str:
    """Text for the page: everything not written by tftrace itself goes through here."""
    return html.escape(str(value), quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], text_columns: int = 1) -> str:
    """An HTML table; the first ``text_columns`` columns are text, the others figures.

    Cells arrive as plain text and are escaped here, so no caller can forget it.
    """

    def cls(i: int) -> str:
        return "" if i < text_columns else ' class="num"'

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td{cls(i)}>{esc(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _kv_table(pairs: Iterable[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def _note(text: str, cls: str = "note") -> str:
    return f'<p class="{cls}">{esc(text)}</p>'


def _manifest_pairs(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What ran and where, from the recorder's manifest."""
    work = manifest.get("workload") or {}
    host = manifest.get("host") or {}
    status = f"{manifest.get('status')} (workload exit code {work.get('exit_code')})"
    if work.get("exception"):
        status += f", {work['exception'].get('type')}: {work['exception'].get('message')}"
    versions = manifest.get("versions") or {}
    pairs = [
        ("status", status),
        ("command", shlex.join(str(a) for a in manifest.get("workload_command") or [])),
        ("recorded", str(manifest.get("created", "-"))),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items())),
        (
            "CPUs",
            f"{len(host.get('cpu_affinity') or [])} schedulable of {host.get('cpu_count')}"
            + (f", quota {host['cpu_quota']}" if host.get("cpu_quota") else ""),
        ),
    ]
    for key, info in (manifest.get("pools") or {}).items():
        pairs.append((f"{key} pool", f"{info.get('size')} threads (source: {info.get('source')})"))
    for name, source in sorted((manifest.get("sources") or {}).items()):
        reason = f": {source['reason']}" if source.get("reason") else ""
        pairs.append((f"source {name}", f"{source.get('state')}{reason}"))
    if manifest.get("name"):
        pairs.insert(0, ("name", str(manifest["name"])))
    return pairs


def _run_section(analysis: Analysis) -> str:
    run = analysis.run
    lo, hi = analysis.window
    pairs = [("path", str(run.path))]
    if run.manifest is not None:
        pairs += _manifest_pairs(run.manifest)
    else:
        pairs.append(("manifest", "none: a bare trace (no OS samples, no py-spy, no identity)"))
    pairs.append(("trace window", f"{(hi - lo) / 1e9:.3f} s ({lo / 1e9:.3f} to {hi / 1e9:.3f} s)"))
    pairs += [("note", note) for note in run.notes]
    return _kv_table(pairs)


def _attr(finding: object, name: str) -> Any:
    value = getattr(finding, name, None)
    return getattr(value, "value", value)  # Enums (severity, pool) show their value


def _css_class(value: object) -> str:
    """A class name from a severity: escaped, and reduced to [a-z0-9-] anyway."""
    return re.sub(r"[^a-z0-9-]", "-", str(value).lower())


def _finding(finding: object) -> str:
    severity = _attr(finding, "severity")
    evidence = getattr(finding, "evidence", None) or {}
    pool = _attr(finding, "pool")
    head = (
        f'<span class="sev">{esc(fmt(severity))}</span> '
        f"<code>{esc(fmt(_attr(finding, 'id')))}</code>"
        + (f" &middot; {esc(pool)}" if not is_missing(pool) else "")
    )
    rows = [(str(k), fmt(v, ".4g")) for k, v in dict(evidence).items()]
    return (
        f'<div class="finding sev-{esc(_css_class(severity))}">'
        f"<div>{head}</div>"
        f'<div class="msg">{esc(fmt(_attr(finding, "message")))}</div>'
        f'<div class="action">{esc(fmt(_attr(finding, "action")))}</div>'
        + (_table(("evidence", "value"), rows, text_columns=2) if rows else "")
        + "</div>"
    )


def _findings_section(findings: Sequence[object]) -> str:
    """Findings in the order given (most severe first, as the diagnosis sorts them)."""
    if not findings:
        return _note("no findings", "none")
    return "".join(_finding(f) for f in findings)


def _pools_section(analysis: Analysis) -> str:
    return _table(POOL_HEADERS, pool_rows(analysis.pools), text_columns=1) + _note(
        "busy = threads of the pool busy at some moment; mean and peak = busy threads "
        "(owning work, not on a CPU); cores = mean / schedulable CPUs."
    )


def _breakdown_section(analysis: Analysis) -> str:
    rows = [
        (str(r.category), f"{r.ns / 1e6:.1f}", f"{r.share:.1%}")
        for r in analysis.breakdown.itertuples()
    ]
    return _table(("category", "ms", "share"), rows) + _note(
        "Every instant of the window in exactly one category, the first that holds; "
        "the shares add up to 100 %."
    )


def _queue_delay_section(analysis: Analysis) -> str:
    if analysis.queue_delay.empty:
        return _note(
            "No closure has both its Record and its StartRegion in the trace "
            "(TensorFlow 2.16 and older write no thread-pool events)."
        )
    rows = [
        (
            str(r.pool),
            str(r.closures),
            *(fmt(v, ".1f") for v in (r.p50_us, r.p90_us, r.p99_us, r.max_us)),
            fmt(r.total_ms, ".2f"),
        )
        for r in analysis.queue_delay.itertuples()
    ]
    headers = ("pool", "closures", "p50 us", "p90 us", "p99 us", "max us", "total ms")
    return _table(headers, rows) + _note("From being scheduled (Record) to starting (StartRegion).")


def _cpu_section(analysis: Analysis) -> str:
    if analysis.cpu.empty:
        return _note("No OS samples: the kernel's CPU accounting is not available.")
    rows = [
        (
            str(r.pool),
            str(r.threads),
            fmt(r.cpu_s, ".3f"),
            fmt(r.busy_s, ".3f"),
            fmt(r.cpu_per_busy, ".2f"),
            fmt(r.wait_s, ".3f"),
        )
        for r in analysis.cpu.itertuples()
    ]
    headers = ("pool", "threads", "CPU s", "busy s", "CPU / busy", "run-queue wait s")
    return _table(headers, rows) + _note(
        "CPU and run-queue wait from the kernel (schedstat); busy from the trace."
    )


def _ops_section(analysis: Analysis) -> str:
    if analysis.top_ops.empty:
        return _note("No op events in the trace.")
    rows = [
        (
            str(r.op_type),
            str(r.count),
            fmt(r.total_ms, ".2f"),
            fmt(r.mean_us, ".1f"),
            parallelism_text(r.parallelism),
        )
        for r in analysis.top_ops.itertuples()
    ]
    headers = ("op type", "count", "total ms", "mean us", "parallelism")
    return _table(headers, rows) + _note(
        "parallelism = Eigen workers busy on the op's behalf, on average; inline = none."
    )


def _steps_section(analysis: Analysis) -> str:
    steps = analysis.steps
    stats = steps.stats()
    if not stats["steps"]:
        return _note("No steps found (no tf.function or annotation repeated on the main thread).")
    summary = (
        f"{stats['steps']} steps ({steps.source}): mean {stats['mean_ms']:.2f} ms, "
        f"sd {stats['std_ms']:.2f} ms (cv {stats['cv']:.2f}), "
        f"min {stats['min_ms']:.2f} ms, max {stats['max_ms']:.2f} ms"
    )
    lo = analysis.window[0]
    rows = [
        (
            str(int(r["step"])),
            f"{(r['start_ns'] - lo) / 1e9:.3f}",
            f"{r['duration_ns'] / 1e6:.2f}",
            *(f"{r[c]:.0%}" for c in CATEGORIES),
        )
        for _, r in steps.table.head(MAX_STEP_ROWS).iterrows()
    ]
    shown = len(rows)
    more = _note(f"First {shown} of {stats['steps']} steps.") if shown < stats["steps"] else ""
    headers = ("step", "start s", "duration ms", *CATEGORIES)
    return _note(summary, "summary") + _table(headers, rows) + more


def _figure(name: str, title: str, caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<figure id="figure-{esc(name)}"><h3>{esc(title)}</h3>'
        f'<img alt="{esc(title)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def _figures_section(images: Mapping[str, bytes], image_dir: str | None) -> str:
    """The known figures in page order, then any other image given, by name."""
    known = {name for name, _, _ in FIGURES}
    parts = [
        _figure(name, title, caption, images[name])
        for name, title, caption in FIGURES
        if name in images
    ]
    parts += [_figure(n, n, "", png) for n, png in images.items() if n not in known]
    not_drawn = [title for name, title, _ in FIGURES if name not in images]
    if not_drawn:
        parts.append(_note("Not drawn: " + ", ".join(not_drawn) + "."))
    if image_dir:
        parts.append(_note(f"The figures are also saved as PNG files in {image_dir}/."))
    return "".join(parts)


def _missing_section(analysis: Analysis) -> str:
    missing = list(analysis.run.missing)
    if analysis.run.manifest is None:
        missing.insert(0, "manifest, OS samples, py-spy, thread identity: a bare trace has none")
    if not missing:
        return _note("Nothing: every source recorded.", "none")
    return "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in missing) + "</ul>"


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def render_page(
    analysis: Analysis,
    images: Mapping[str, bytes],
    findings: Sequence[object] = (),
    image_dir: str | None = None,
) -> str:
    """The whole page as a string.

    ``images``: PNG bytes by figure name (``FIGURES`` names come in their order, with their
    title and caption). ``findings``: objects with ``id``, ``severity`` (an Enum), ``pool``,
    ``message``, ``action`` and ``evidence`` (a dict), rendered in the order given.
    ``image_dir``: where the same PNGs were written, relative to the page, to say so.
    """
    bodies = {
        "run": _run_section(analysis),
        "findings": _findings_section(findings),
        "pools": _pools_section(analysis),
        "breakdown": _breakdown_section(analysis),
        "queue-delay": _queue_delay_section(analysis),
        "cpu": _cpu_section(analysis),
        "ops": _ops_section(analysis),
        "steps": _steps_section(analysis),
        "figures": _figures_section(images, image_dir),
        "missing": _missing_section(analysis),
    }
    nav = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in SECTIONS)
    sections = "".join(_section(a, t, bodies[a]) for a, t in SECTIONS)
    title = f"tftrace report: {analysis.run.path}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main><h1>{esc(title)}</h1><nav>{nav}</nav>{sections}"
        f"<footer>Written by tftrace {esc(__version__)}. Definitions of every figure: "
        "docs/analyses.md in tftrace's source.</footer></main></body></html>\n"
    )
