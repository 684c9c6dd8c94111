"""A ``Prediction`` shown: one row per setting (terminal and HTML, one ``Table``), then how it
was calibrated and what it could not predict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.predict.result import Prediction, Served
from tftrace.analysis.render.console import capture, say
from tftrace.analysis.render.console import console as make_console
from tftrace.analysis.render.html import page
from tftrace.analysis.render.table import Table, html_table, print_table
from tftrace.analysis.render.window_text import profiler_cost_text

if TYPE_CHECKING:
    from rich.console import Console

HEADERS = ("intra", "inter", "step ms", "speedup", "binds", "basis")
SERVER_HEADERS = (
    *("intra", "inter", "req/s", "mean ms", "p50 ms", "p99 ms"),
    *("speedup", "binds", "basis"),
)


def headline(p: Prediction) -> list[str]:
    """What was replayed, and on what."""
    lines = [
        f"predicted from {p.path}: recorded at intra-op {p.recorded_intra}, inter-op "
        f"{p.recorded_inter}, on {p.cores_basis}",
        f"window: {p.window_basis}",
    ]
    if p.server is not None:
        s = p.server
        lines.append(
            f"recorded: {s.requests_per_s:.1f} requests/s, latency mean {s.mean_ms:.2f} ms, "
            f"p50 {s.p50_ms:.2f} ms, p99 {s.p99_ms:.2f} ms"
        )
    if p.profiler_cost is not None:
        lines.append(
            f"{profiler_cost_text(p.profiler_cost)}: the figures below are the profiled "
            "workload's, and the profiler's cost differs by setting"
        )
    return lines


def prediction_table(p: Prediction) -> Table:
    """One row per setting; the recorded setting is the one whose basis says so."""
    if p.server is not None:
        return _server_table(p)
    rows = [
        (
            str(s.intra),
            str(s.inter),
            f"{s.step_ms:.2f}",
            s.speedup_label(),
            s.reason,
            s.basis,
        )
        for s in p.settings
    ]
    calibration = (
        f"calibration: the replay of the recorded setting gives {p.replayed_ms:.2f} ms a step "
        f"against the recorded {p.recorded_ms:.2f} ms (residual {p.residual:+.1%}, "
        f"{p.steps} step{'s' * (p.steps != 1)} replayed); {_applied(p)}"
    )
    return Table(
        "predicted step time per setting",
        HEADERS,
        rows,
        text_columns=0,
        text_at=(4, 5),
        notes=(calibration, *(f"note: {n}" for n in p.notes)),
    )


def _server_table(p: Prediction) -> Table:
    rows = []
    for s in p.settings:
        served = s.served
        assert served is not None
        span = s.served_span()
        # a span's latencies run from its fast end (low) to its slow end (high)
        low, high = (span[1], span[0]) if span else (served, served)
        rows.append(
            (
                str(s.intra),
                str(s.inter),
                # a span of hundreds of requests/s needs no tenths
                _figure(span[0].requests_per_s, span[1].requests_per_s, _tenths(span[0]))
                if span
                else f"{served.requests_per_s:.1f}",
                _figure(low.mean_ms, high.mean_ms),
                _figure(low.p50_ms, high.p50_ms),
                _figure(low.p99_ms, high.p99_ms),
                s.speedup_label(),
                s.reason,
                s.basis,
            )
        )
    calibration = (
        f"calibration: replayed at the recorded setting, {p.steps} requests' threads spent "
        f"{p.replayed_ms:.1f} ms from their first request to their last (summed over the "
        f"threads) against {p.replayed_ms / (1 + p.residual):.1f} ms recorded (residual "
        f"{p.residual:+.1%}); {_applied(p)}; speedup: requests/s over the recorded setting's"
    )
    # a narrow terminal puts a span's ends on two lines (at its space), never cuts a figure
    widths = {i: {"overflow": "fold"} for i in range(2, 7)}
    return Table(
        "predicted requests per second and latency per setting",
        SERVER_HEADERS,
        tuple(rows),
        text_columns=0,
        text_at=(7, 8),
        notes=(calibration, *(f"note: {n}" for n in p.notes)),
        column_options=widths,
    )


def render(p: Prediction, out: Console | None = None) -> None:
    console = out or make_console()
    for line in headline(p):
        say(console, line)
    print_table(console, prediction_table(p))


def prediction_text(p: Prediction) -> str:
    """The terminal text as plain text (what ``print(prediction)`` shows)."""
    return capture(lambda out: render(p, out))


def prediction_page(p: Prediction) -> str:
    """The prediction as one self-contained HTML page."""
    from tftrace.analysis.render.html_sections import esc

    body = "".join(f"<p>{esc(line)}</p>" for line in headline(p))
    return page(f"tftrace predict: {p.path}", body + html_table(prediction_table(p), "h2"))


def _figure(low: float, high: float, digits: int = 2) -> str:
    """One figure, or a span where its ends differ: ``12.40`` or ``10.02 to 16.31`` (the
    space lets a narrow terminal put its ends on two lines, never cut one)."""
    if f"{low:.{digits}f}" == f"{high:.{digits}f}":
        return f"{low:.{digits}f}"
    return f"{low:.{digits}f} to {high:.{digits}f}"


def _tenths(slow: Served) -> int:
    """Digits after the point for a span of requests/s that starts at ``slow``'s."""
    return 0 if slow.requests_per_s >= 100 else 1


def _applied(p: Prediction) -> str:
    """How the residual reaches every setting."""
    if p.charged > 0:
        return "the time short of the recording is charged to each setting by its crowded time"
    return "every setting is scaled by it"
