"""Many hosts of one distributed TensorFlow job: each host's run analysed on its own (in
parallel, through any ``concurrent.futures`` executor), then the cross-host view: step time
per worker, the straggler, the time each worker waits in collective ops for the others."""

from tftrace.analysis.cluster.analyze import ClusterAnalysis, analyze_cluster
from tftrace.analysis.cluster.layout import NotAClusterDir, is_cluster_dir

__all__ = ["ClusterAnalysis", "NotAClusterDir", "analyze_cluster", "is_cluster_dir"]
