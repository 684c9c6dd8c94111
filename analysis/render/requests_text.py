"""A server's requests in words and tables: the same lines and cells in the terminal, the HTML
report, TensorBoard's text and the Thread pools tab (each escapes them as its medium needs).

Shown only where the workload is a server (``Analysis.requests``; None for a loop, whose
output has no requests section). Nothing is computed here: every figure is a field or a
table of ``metrics/requests.py``'s ``Requests``; the window they cover is the Analysis' own,
named by ``window_text.window_line``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.render.formatting import fmt, markdown_table, markdown_text

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

TITLE = "requests"
LATENCY_TITLE = "request latency (ms)"
LATENCY_HEADERS = ("function", "requests", "p50", "p90", "p99", "max", "mean")
BREAKDOWN_TITLE = "where a request's time went"
BREAKDOWN_HEADERS = ("category", "share", "mean ms")
LATENCY_FIGURES = ("p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms")


def summary_lines(analysis: Analysis) -> list[str]:
    """``shape: server (tf.function serve): 402 requests in the 0.161 s window, 2498.1
    requests/s``, ``requests in flight: mean 3.74, peak 4`` and its pace (``request_pace``,
    where the window holds enough of it); none for a workload that is no server."""
    requests = analysis.requests
    if requests is None:
        return []
    pace = analysis.request_pace
    return [
        f"shape: {analysis.shape} ({requests.source}): {len(requests.table)} requests in the "
        f"{requests.seconds:.3f} s window, {requests.throughput:.1f} requests/s",
        f"requests in flight: mean {requests.mean_in_flight():.2f}, "
        f"peak {requests.peak_in_flight()}",
        *([pace.line()] if pace else []),
    ]


def window_note(analysis: Analysis) -> str:
    """Which window the requests were counted over, and why (the Analysis' own words)."""
    return f"over the analysed window: {analysis.window_basis}"


def latency_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """One row for all requests, then one per function where there are several (ms); none
    for a loop."""
    requests = analysis.requests
    if requests is None:
        return []
    return [
        (
            str(r["function"]),
            str(r["requests"]),
            *(fmt(r[c], ".2f") for c in LATENCY_FIGURES),
        )
        for r in requests.latency().to_dict("records")
    ]


def breakdown_rows(analysis: Analysis) -> list[tuple[str, str, str]]:
    """Each category's share of the summed latency, and its mean ms per request; none for a
    loop."""
    requests = analysis.requests
    if requests is None:
        return []
    return [
        (str(r["category"]), f"{r['share']:.1%}", f"{r['mean_ms']:.3f}")
        for r in requests.breakdown().to_dict("records")
    ]


def markdown_tables(analysis: Analysis) -> list[str]:
    """A server's requests as markdown (TensorBoard's text): the summary over the window
    named, latency per function (ms), where a request's time went; nothing for a loop."""
    if analysis.requests is None:
        return []
    lines = [*summary_lines(analysis), window_note(analysis)]
    return [
        "\n".join(f"- {markdown_text(line)}" for line in lines),  # names a function: as text
        f"**{LATENCY_TITLE}**\n\n" + markdown_table(LATENCY_HEADERS, latency_rows(analysis)),
        f"**{BREAKDOWN_TITLE}**\n\n" + markdown_table(BREAKDOWN_HEADERS, breakdown_rows(analysis)),
    ]
