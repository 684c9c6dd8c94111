"""The HTML report's Requests section: a server's requests, over the analysed window (named);
none for a loop. Its words and cells are ``requests_text``'s, escaped here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.render.html_sections import REQUEST_FIGURES, esc, note, table
from tftrace.analysis.render.requests_text import (
    BREAKDOWN_HEADERS,
    BREAKDOWN_TITLE,
    LATENCY_HEADERS,
    LATENCY_TITLE,
    breakdown_rows,
    latency_rows,
    summary_lines,
    window_note,
)

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis


def requests_section(analysis: Analysis, figures: bool = True) -> str | None:
    """A server's requests: how many, requests/s, in flight, latency per function, where a
    request's time went, over the analysed window (named), and links to its ``figures``
    below; None for a loop (no section)."""
    requests = analysis.requests
    if requests is None:
        return None
    first, *rest = summary_lines(analysis)
    links = ", ".join(
        f'<a href="#figure-{esc(name)}">{esc(title.lower())}</a>'
        for name, title, _ in REQUEST_FIGURES
    )
    return (
        f'<p class="summary"><b>{esc(first)}</b></p>'
        + "".join(note(line) for line in rest)
        + note(window_note(analysis))
        + f"<h3>{esc(LATENCY_TITLE)}</h3>"
        + table(LATENCY_HEADERS, latency_rows(requests))
        + f"<h3>{esc(BREAKDOWN_TITLE)}</h3>"
        + table(BREAKDOWN_HEADERS, breakdown_rows(requests))
        + note(
            "Every instant of a request, from its call to its return, in exactly one "
            "category, the first that holds: eigen wait, running, inter-op wait, python, "
            "tf runtime (docs/analyses.md); the shares add up to 100 % of the summed latency."
        )
        + (f'<p class="note">Figures: {links}.</p>' if figures else "")
    )
