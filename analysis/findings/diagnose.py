"""Run every rule on a measured run: ``diagnose(run, metrics)`` -> findings, causes first, then
most severe first.

Each rule is a small function of the run and its metrics, documented with its premise and the
threshold it uses (see docs/analyses.md, "Findings"). Two checks hold for every rule:

- Every share a rule prints is of the analysis window (or, where its message says so, of a
  pool's CPU time) and lies in [0, 1]; a rule puts each in its evidence under a key ending in
  ``share``, and ``diagnose`` refuses a finding whose share is outside (a bug in its rule).
- When two findings explain the same time, ``CONSEQUENCES`` says which is the cause: the
  consequence keeps its figures, names its causes in ``consequence_of`` and comes after them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tftrace.analysis.findings.contention_rules import (
    library_pool_crowds_cores,
    other_processes_take_cores,
    quota_throttles,
    steal_time,
    tf_data_competes,
)
from tftrace.analysis.findings.core_rules import underused_cores
from tftrace.analysis.findings.crowd_rules import shards_wait_for_cores
from tftrace.analysis.findings.finding import SEVERITY_ORDER, Finding
from tftrace.analysis.findings.pool_rules import (
    eigen_spin,
    idle_cores_while_work_waited,
    inline_ops,
    intra_pool_size_vs_cores,
    ops_too_small_to_split,
)
from tftrace.analysis.findings.server_rules import (
    one_request_at_a_time,
    pools_crowd_cores,
    requests_queue_for_inter_op,
    without_splitting_for_busy_servers,
)
from tftrace.analysis.findings.settings_rules import pinned_sizes_vs_cpus, setters_too_late
from tftrace.analysis.findings.workload_rules import input_pipeline, python_bound
from tftrace.analysis.metrics.busy import trace_window
from tftrace.analysis.model.run import Run

if TYPE_CHECKING:
    from tftrace.analysis.metrics.measured import Metrics

RULES: tuple[Callable[[Run, Metrics], list[Finding]], ...] = (
    idle_cores_while_work_waited,
    ops_too_small_to_split,
    intra_pool_size_vs_cores,
    inline_ops,
    python_bound,
    input_pipeline,
    eigen_spin,
    pinned_sizes_vs_cpus,
    setters_too_late,
    requests_queue_for_inter_op,
    pools_crowd_cores,
    shards_wait_for_cores,
    one_request_at_a_time,
    other_processes_take_cores,
    steal_time,
    quota_throttles,
    library_pool_crowds_cores,
    tf_data_competes,
    underused_cores,
)


# consequence id -> the ids of findings that, when they fire too, explain the same time as its
# cause: ops in a Python-bound or input-starved step are small or inline because the step does
# little else (the Python, or the pipeline, is what to fix); cores idle for those reasons.
CONSEQUENCES: dict[str, tuple[str, ...]] = {
    # a py_function whose Python calls a library that crowds the cores: the library first
    "python-bound": ("library-pool-crowds-cores",),
    "ops-too-small-to-split": ("python-bound", "input-pipeline-starves-step"),
    "ops-run-inline": ("python-bound", "input-pipeline-starves-step"),
    "underused-cores": (
        "python-bound",
        "input-pipeline-starves-step",
        "idle-cores-while-work-waited",
        "ops-too-small-to-split",
        "ops-run-inline",
        "threading-set-too-late",
        "one-request-at-a-time",
        "other-processes-take-cores",
        "cpu-quota-throttles",
    ),
    # A default size above the quota is what the throttling rule says with the kernel's count.
    "intra-op-exceeds-cpu-quota": ("cpu-quota-throttles",),
    "inter-op-exceeds-cpu-quota": ("cpu-quota-throttles",),
}
SHARE_TOLERANCE = 1e-6  # rounding


def check_shares(finding: Finding) -> Finding:
    """``finding`` itself, or ValueError when a share in its evidence is outside [0, 1]."""
    for key, value in finding.evidence.items():
        share = key.endswith("share") and isinstance(value, int | float)
        if share and not -SHARE_TOLERANCE <= value <= 1 + SHARE_TOLERANCE:
            raise ValueError(
                f"finding {finding.id}: {key} = {value} is not a share in [0, 1] "
                "(a bug in its rule)"
            )
    return finding


def with_causes(found: list[Finding]) -> list[Finding]:
    """``found`` with ``consequence_of`` set from ``CONSEQUENCES``; causes first, then by
    severity (a stable sort: rules' order among equals).

    A consequence whose causes all advise no thread setting (their action is code: Python,
    the input pipeline, a setter called too late) advises none either: no setting fixes a
    symptom of those, and the symptom's own advice was measured to mislead (on a sequential
    tf.data map, ops-too-small-to-split's intra 1 ran 9 % slower)."""
    by_id = {f.id: f for f in found}
    marked = []
    for f in found:
        causes = tuple(c for c in CONSEQUENCES.get(f.id, ()) if c in by_id)
        code_only = bool(causes) and all(by_id[c].setting is None for c in causes)
        marked.append(replace(f, consequence_of=causes, setting=None if code_only else f.setting))
    return sorted(marked, key=lambda f: (bool(f.consequence_of), SEVERITY_ORDER[f.severity]))


def diagnose(run: Run, analysis: Metrics) -> list[Finding]:
    """Every rule's findings over the analysis window: causes first, then most severe first."""
    window = analysis.window or trace_window(run)
    found = [
        check_shares(replace(f, window=f.window or window))
        for rule in RULES
        for f in rule(run, analysis)
    ]
    return with_causes(without_splitting_for_busy_servers(run, analysis, found))
