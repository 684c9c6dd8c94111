"""What a run lacks, filled from its trace or from the user: pool sizes counted from the trace's
threads when no manifest says them (a bare .xplane.pb), and the CPU count given as ``--cpus``.

The filled manifest stays a bare trace's (``exists`` False): rules that need how the pools were
sized (env, config, defaults) or what the workload called still see nothing.
"""

from __future__ import annotations

import dataclasses

from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import Run
from tftrace.errors import TftraceError
from tftrace.tracer.manifest_reader import PoolSetting

# Where a size counted from the trace comes from, as the manifest's pool ``source`` says it.
FROM_TRACE = "from the trace's threads"
FROM_USER = "given (--cpus)"


def trace_pool_sizes(run: Run) -> dict[str, int]:
    """Threads of the inter- and intra-op pools that the trace has lines for (TF names them
    ``tf_Compute`` and ``tf_numa_*_Eigen``), where at least two: a pool with no line or one
    is left out (unknown)."""
    lines = run.threads[run.threads["line_id"].notna()]
    pools = lines["pool"].astype(str)
    sizes = {
        "inter_op": int((pools == Pool.INTER_OP.value).sum()),
        "intra_op": int((pools == Pool.INTRA_OP.value).sum()),
    }
    # A worker that ran nothing has no line, so a count is a lower bound; one Eigen line says
    # only that the pool has at least two threads (with intra-op 1 its thread runs nothing).
    return {k: v for k, v in sizes.items() if v >= 2}


def with_trace_facts(run: Run, cpus: int | None = None) -> Run:
    """``run`` with pool sizes from its trace where the manifest has none, and ``cpus`` (when
    given) as the CPUs the process could use."""
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1):
        raise TftraceError(f"cpus must be a whole number >= 1, not {cpus!r}")
    manifest = run.manifest
    pools = dict(manifest.pools)
    for key, size in trace_pool_sizes(run).items():
        if manifest.pool(key).size is None:
            pools[key] = PoolSetting(size=size, source=FROM_TRACE)
    host = manifest.host
    if cpus is not None:
        host = dataclasses.replace(host, cpu_count=cpus, cpu_affinity=())
    if pools == dict(manifest.pools) and host == manifest.host:
        return run
    return dataclasses.replace(run, manifest=dataclasses.replace(manifest, pools=pools, host=host))
