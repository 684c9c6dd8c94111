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

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tftrace.analysis.render.core_use_text import core_use_section, not_checked_section
from tftrace.analysis.render.html_requests import requests_section
from tftrace.analysis.render.html_sections import (
    FIGURES,
    REQUEST_FIGURES,
    breakdown_section,
    census_section,
    cpu_section,
    esc,
    figures_section,
    findings_section,
    missing_section,
    ops_section,
    pools_section,
    python_section,
    queue_delay_section,
    run_section,
    section,
    steps_section,
)
from tftrace.analysis.render.window_text import window_line
from tftrace.version import __version__

SECTIONS = (
    ("core-use", "Core use"),
    ("run", "Run"),
    ("findings", "Findings"),
    ("not-checked", "Not checked"),
    ("pools", "Pools"),
    ("census", "Threads by pool"),
    ("breakdown", "Where the wall time went"),
    ("python", "Which Python"),
    ("queue-delay", "Queue delay"),
    ("cpu", "CPU truth"),
    ("ops", "Top op types"),
    ("steps", "Steps"),
    ("figures", "Figures"),
    ("missing", "Missing"),
)
# A server's requests, after the core use (a loop's report has no such section).
REQUESTS_SECTION = ("requests", "Requests")
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


def render_page(
    analysis: Analysis,
    images: Mapping[str, bytes],
    image_dir: str | None = None,
) -> str:
    """The whole page as a string.

    ``images``: PNG bytes by figure name (``FIGURES`` names come in their order, with their
    title and caption). The findings are the analysis' own, in their order.
    ``image_dir``: where the same PNGs were written, relative to the page, to say so.
    """
    bodies = {
        "run": run_section(analysis),
        **_analysis_sections(analysis, figures=True),
        "figures": figures_section(images, image_dir, figures_of(analysis)),
    }
    shown = sections_of(analysis)
    nav = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in shown)
    sections = "".join(section(a, t, bodies[a] or "") for a, t in shown)
    return page(f"tftrace report: {analysis.run.path}", f"<nav>{nav}</nav>{sections}")


def page(title: str, body: str) -> str:
    """A self-contained page: ``title`` (escaped here) as its heading, then ``body`` (HTML that
    the caller escaped), under the report's content policy and style."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main><h1>{esc(title)}</h1>{body}"
        f"<footer>Written by tftrace {esc(__version__)}. Definitions of every figure: "
        "docs/analyses.md in tftrace's source.</footer></main></body></html>\n"
    )


if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

__all__ = [
    "CSS",
    "FIGURES",
    "REQUESTS_SECTION",
    "REQUEST_FIGURES",
    "SECTIONS",
    "analysis_fragment",
    "esc",
    "figures_of",
    "page",
    "render_page",
    "sections_of",
]


def sections_of(analysis: Analysis) -> tuple[tuple[str, str], ...]:
    """The page's sections (anchor, title): ``SECTIONS``, and for a server its requests
    right after the core use."""
    if analysis.requests is None:
        return SECTIONS
    return (SECTIONS[0], REQUESTS_SECTION, *SECTIONS[1:])


def figures_of(analysis: Analysis) -> tuple[tuple[str, str, str], ...]:
    """The figures a report of this analysis draws: ``FIGURES``, then a server's own."""
    return FIGURES if analysis.requests is None else (*FIGURES, *REQUEST_FIGURES)


def _analysis_sections(analysis: Analysis, figures: bool = False) -> dict[str, str | None]:
    """The sections drawn from the Analysis alone, by anchor: the page's and the fragment's
    (None: not this analysis' section); ``figures``: the page has figures to point to."""
    return {
        "core-use": core_use_section(analysis),
        "requests": requests_section(analysis, figures),
        "findings": findings_section(analysis.findings),
        "not-checked": not_checked_section(analysis),
        "pools": pools_section(analysis),
        "census": census_section(analysis),
        "breakdown": breakdown_section(analysis),
        "python": python_section(analysis),
        "queue-delay": queue_delay_section(analysis),
        "cpu": cpu_section(analysis),
        "ops": ops_section(analysis),
        "steps": steps_section(analysis),
        "missing": missing_section(analysis),
    }


def analysis_fragment(analysis: Analysis) -> str:
    """The report's tables without its page around them, for a notebook cell
    (``Analysis._repr_html_``): findings first, then pools, breakdown, queue delay, CPU truth,
    ops and steps; the styles are scoped to the fragment so they leave the notebook alone."""
    bodies = _analysis_sections(analysis)
    sections = "".join(
        section(a, t, body) for a, t in sections_of(analysis) if (body := bodies.get(a)) is not None
    )
    scoped = re.sub(r"(^|\})\s*([^{}@]+)\{", _scope, CSS)
    return (
        f'<div class="tftrace"><style>{scoped}</style>'
        f"<h3>tftrace: {esc(analysis.run.path)}</h3><p>{esc(window_line(analysis))}</p>"
        f"{sections}</div>"
    )


def _scope(match: re.Match[str]) -> str:
    """``a, b {`` -> ``.tftrace a, .tftrace b {`` (body and main become the fragment itself)."""
    selectors = []
    for selector in match.group(2).split(","):
        selector = selector.strip()
        selectors.append(".tftrace" if selector in ("body", "main") else f".tftrace {selector}")
    return f"{match.group(1)}\n{', '.join(selectors)} {{"
