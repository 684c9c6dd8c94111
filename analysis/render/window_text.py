"""The analysed window and the warm-up as text: one line each, the same in the terminal, the HTML
report and TensorBoard's about text (which escape or not as their medium needs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis


def window_line(analysis: Analysis) -> str:
    """``window 0.297 s (23.938-24.235 s): steady: steps 2-6 of 6 (...), after 1 warm-up step``"""
    lo, hi = analysis.window
    return (
        f"window {(hi - lo) / 1e9:.3f} s ({lo / 1e9:.3f}-{hi / 1e9:.3f} s): {analysis.window_basis}"
    )


def warmup_line(analysis: Analysis) -> str | None:
    """``warm-up: step 1, 11.970 s: tracing (graph building) 62%, ...``; None without one."""
    warmup = analysis.warmup
    if warmup is None:
        return None
    which = "step 1" if warmup.steps == 1 else f"steps 1-{warmup.steps}"
    parts = [
        f"{r.category} {r.share:.0%}"
        for r in warmup.breakdown.sort_values("ns", ascending=False).itertuples()
        if r.ns > 0 and r.share >= 0.005
    ]
    before = f"; {warmup.before_ns / 1e9:.3f} s of trace before it" if warmup.before_ns else ""
    return (
        f"warm-up: {which}, {warmup.seconds:.3f} s: {', '.join(parts) or 'nothing traced'}{before}"
    )


class ProfilerCostFigures(Protocol):
    """What ``profiler_cost_text`` shows of ``Analysis.profiler_cost`` (outputs read the
    Analysis, not the metrics)."""

    @property
    def profiled_s(self) -> float: ...
    @property
    def unprofiled_s(self) -> float: ...
    @property
    def profiled_steps(self) -> int: ...
    @property
    def unprofiled_steps(self) -> int: ...
    @property
    def unprofiled_side(self) -> str: ...
    @property
    def server(self) -> bool: ...
    @property
    def unit(self) -> str: ...
    @property
    def added(self) -> float: ...


def profiler_cost_line(analysis: Analysis) -> str | None:
    """``profiler_cost_text`` of the analysis; None where every step was profiled."""
    cost = analysis.profiler_cost
    if cost is None:
        return None
    return f"{profiler_cost_text(cost)}: the trace's times are the profiled workload's"


def profiler_cost_text(cost: ProfilerCostFigures) -> str:
    """``profiler's cost: +27 % a step: a step took 40.10 ms profiled (10 steps), 31.52 ms
    unprofiled (15 steps after the window; the workload's own timing)`` (a server: its
    requests/s)."""
    side = f"{cost.unprofiled_side} the window; the workload's own timing"
    if cost.server:
        figures = (
            f"{1 / cost.profiled_s:.1f} requests/s profiled ({cost.profiled_steps} requests), "
            f"{1 / cost.unprofiled_s:.1f} unprofiled ({cost.unprofiled_steps} requests {side})"
        )
    else:
        figures = (
            f"a step took {cost.profiled_s * 1e3:.2f} ms profiled ({cost.profiled_steps} steps), "
            f"{cost.unprofiled_s * 1e3:.2f} ms unprofiled ({cost.unprofiled_steps} steps {side})"
        )
    return f"profiler's cost: {cost.added:+.0%} a {cost.unit}: {figures}"


def steps_line(analysis: Analysis) -> str | None:
    """``steps: 5 of 6 in the window (tf.function train), 1 batch each, mean ...``."""
    stats = analysis.step_stats
    if not stats["steps"]:
        return None
    batches = stats["batches_per_step"]
    each = f", {batches:g} batch{'es' * (batches != 1)} each" if batches else ""
    return (
        f"steps: {stats['steps']} of {stats['found']} in the window ({analysis.steps.source})"
        f"{each}, "
        f"mean {stats['mean_ms']:.2f} ms, sd {stats['std_ms']:.2f} ms (cv {stats['cv']:.2f}), "
        f"min {stats['min_ms']:.2f}, max {stats['max_ms']:.2f} ms"
    )


MAX_OUTLIERS_NAMED = 10


def step_summary_lines(analysis: Analysis) -> list[str]:
    """The steps in a few lines: percentiles and trend, the slowest, the outliers."""
    summary = analysis.step_summary
    if summary is None:
        return []
    trend = ""
    if summary.trend is not None:
        trend = f"; the last tenth of the steps {_change(summary.trend)} than the first tenth"
    lines = [
        f"step time: p50 {summary.p50_ms:.2f} ms, p90 {summary.p90_ms:.2f} ms, "
        f"p99 {summary.p99_ms:.2f} ms{trend}",
        "slowest: "
        + ", ".join(f"step {s} {ms:.2f} ms ({largest})" for s, ms, largest in summary.slowest),
    ]
    if summary.outliers:
        named = ", ".join(str(s) for s in summary.outliers[:MAX_OUTLIERS_NAMED])
        more = " ..." if len(summary.outliers) > MAX_OUTLIERS_NAMED else ""
        lines.append(
            f"outliers: {len(summary.outliers)} step(s) above {summary.outlier_above_ms:.2f} ms "
            f"(steps {named}{more})"
        )
    return lines


def _change(trend: float) -> str:
    if abs(trend) < 0.005:
        return "took as long"
    return f"took {abs(trend):.0%} {'longer' if trend > 0 else 'less'}"
