"""The HTML report's Requests section: a server's requests, over the analysed window (named);
none for a loop. Its words and cells are ``requests_text``'s, escaped here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.render.html_sections import REQUEST_FIGURES, esc, note
from tftrace.analysis.render.report_tables import request_tables
from tftrace.analysis.render.requests_text import summary_lines, window_note
from tftrace.analysis.render.table import html_table

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
        + "".join(html_table(t, title_tag="h3") for t in request_tables(analysis))
        + note(
            "Every instant of a request, from its call to its return, in exactly one "
            "category, the first that holds: eigen wait, running, inter-op wait, python, "
            "tf runtime (docs/analyses.md); the shares add up to 100 % of the summed latency."
        )
        + (f'<p class="note">Figures: {links}.</p>' if figures else "")
    )
