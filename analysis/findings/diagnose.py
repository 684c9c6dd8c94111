"""Run every rule on an analysed run: ``diagnose(run, analysis)`` -> findings, most severe first.

Each rule is a small function of the run and its metrics, documented with the threshold it uses
(see docs/analyses.md, "Findings").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tftrace.analysis.findings.finding import SEVERITY_ORDER, Finding
from tftrace.analysis.findings.pool_rules import (
    eigen_spin,
    idle_cores_while_work_waited,
    inline_ops,
    intra_pool_size_vs_cores,
    ops_too_small_to_split,
)
from tftrace.analysis.findings.settings_rules import pinned_sizes_vs_cpus, setters_too_late
from tftrace.analysis.findings.workload_rules import input_pipeline, python_bound
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.model.run import Run

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

RULES: tuple[Callable[[Run, Analysis], list[Finding]], ...] = (
    idle_cores_while_work_waited,
    ops_too_small_to_split,
    intra_pool_size_vs_cores,
    inline_ops,
    python_bound,
    input_pipeline,
    eigen_spin,
    pinned_sizes_vs_cpus,
    setters_too_late,
)


def diagnose(run: Run, analysis: Analysis) -> list[Finding]:
    """Every rule's findings, most severe first."""
    window = analysis.window or trace_window(run)
    found = [
        Finding(**{**f.__dict__, "window": f.window or window})
        for rule in RULES
        for f in rule(run, analysis)
    ]
    return sorted(found, key=lambda f: SEVERITY_ORDER[f.severity])
