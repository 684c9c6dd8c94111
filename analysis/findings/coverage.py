"""Which rules a run cannot check, in one line each: what they need that the run lacks.

A bare trace (a .xplane.pb without its run directory) has no OS sampler, no manifest (how the
pools were sized, what the workload called) and no CPU count unless ``--cpus`` gives it; a
recording made with ``--no-sampler`` lacks the sampler alone.
"""

from __future__ import annotations

from tftrace.analysis.model.run import Run

SAMPLER = "the OS sampler"
MANIFEST = "the run's manifest"
CPUS = "the CPU count"
INTRA_SIZE = "the intra-op pool's size"

# rule id -> what it needs (ids as the rules spell them in their findings)
NEEDS: dict[str, tuple[str, ...]] = {
    "idle-cores-while-work-waited": (CPUS,),
    "intra-pool-oversubscribed": (SAMPLER, CPUS),
    "intra-pool-smaller-than-cores": (CPUS,),
    "ops-run-inline": (INTRA_SIZE, CPUS),
    "eigen-spin": (SAMPLER,),
    "*-pinned-vs-cpus": (MANIFEST,),
    "*-exceeds-cpu-quota": (MANIFEST,),
    "threading-set-too-late": (MANIFEST,),
}

_WHY = {
    SAMPLER: "needs the OS sampler (not in a bare trace)",
    MANIFEST: "needs the run's manifest (not in a bare trace)",
    CPUS: "needs the CPU count (give --cpus N)",
    INTRA_SIZE: "needs the intra-op pool's size (no Eigen thread in the trace: intra-op 1 runs "
    "none)",
}


def lacking(run: Run) -> set[str]:
    """What of ``NEEDS``'s requirements the run lacks."""
    out = set()
    if run.samples.empty:
        out.add(SAMPLER)
    if not run.manifest.exists:
        out.add(MANIFEST)
    if not run.manifest.usable_cpus:
        out.add(CPUS)
    if run.manifest.pool("intra_op").size is None:
        out.add(INTRA_SIZE)
    return out


def not_checked(run: Run) -> tuple[str, ...]:
    """One line per rule the run cannot check: ``"eigen-spin: needs the OS sampler ..."``,
    plus the part of python-bound that needs the sampler."""
    missing = lacking(run)
    lines = []
    for rule, needs in NEEDS.items():
        first = next((n for n in needs if n in missing), None)
        if first is not None:
            lines.append(f"{rule}: {_WHY[first]}")
    if SAMPLER in missing:
        lines.append(
            "python-bound: Python between ops needs the OS sampler (checked for "
            "tf.py_function ops only)"
        )
    return tuple(lines)
