"""Two runs of one workload compared: ``diff(a, b) -> RunDiff`` (``tftrace diff A B``).

``compare.py`` matches the two over their steady steps and gathers the figures each
``Analysis`` already has; ``stats.py`` judges the step times (rank test and bootstrap);
``manifest_diff.py`` says what differs in how they ran, and refuses runs of different
workloads; ``result.py`` is the ``RunDiff``; ``render.py`` shows it (terminal, HTML);
``sweep_dir.py`` compares a sweep directory's recorded settings with its recorded baseline
(``diff_sweep``).
"""

from tftrace.analysis.diff.compare import diff
from tftrace.analysis.diff.manifest_diff import RunsNotComparable
from tftrace.analysis.diff.result import RunDiff
from tftrace.analysis.diff.sweep_dir import SweepDiff, diff_sweep

__all__ = ["RunDiff", "RunsNotComparable", "SweepDiff", "diff", "diff_sweep"]
