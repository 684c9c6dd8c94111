"""Many hosts of one distributed TensorFlow job: each host's run analysed on its own (in
parallel, through any ``concurrent.futures`` executor), then the cross-host view: step time
per worker, the straggler, the time each worker waits in collective ops for the others.

``layout.kind_of`` decides for every command whether a path is one run, a sweep or a directory
of hosts; ``reports.report_cluster`` and ``export.export_cluster`` write a job's report and
export as ``tftrace report DIR`` and ``tftrace export DIR`` do."""

from tftrace.analysis.cluster.analyze import ClusterAnalysis, analyze_cluster
from tftrace.analysis.cluster.layout import NotAClusterDir, PathKind, is_cluster_dir, kind_of

__all__ = [
    "ClusterAnalysis",
    "NotAClusterDir",
    "PathKind",
    "analyze_cluster",
    "is_cluster_dir",
    "kind_of",
]
