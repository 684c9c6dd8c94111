"""Findings: what the figures mean for the thread settings, each with its evidence and one action.

A finding is data (``Finding``, ``finding.py``); the rules are small functions of a run and its
metrics, grouped by what they look at (``pool_rules``, ``workload_rules``, ``settings_rules``),
each documented with its premise and the threshold it uses. ``diagnose`` runs them all, marks
a finding that is the consequence of another (``consequence_of``) and orders them: causes
first, then by severity. Renderers (terminal, HTML, TensorBoard) only display them.
"""

from tftrace.analysis.findings.diagnose import RULES, diagnose
from tftrace.analysis.findings.finding import SEVERITY_ORDER, Finding, Severity

__all__ = ["RULES", "SEVERITY_ORDER", "Finding", "Severity", "diagnose"]
