"""Two multi-host directories of one job compared (``tftrace diff DIR_A DIR_B``): the job's
step period with a verdict, each host against the host of the same name (``tftrace.diff``'s
``RunDiff``), step time, wait and own time per worker side by side, the straggler before and
after, and the hosts only one side has.

Why the job's period as well as each host's diff: in a synchronous data-parallel job every
worker's step ends with the slowest's all-reduce, so the job advances at the period of its
steps. A host's own step call can stay the same while the job gets faster (a straggler that
sleeps *between* its calls no more), so each host's verdict alone can mislead.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tftrace.analysis.cluster.analyze import ClusterAnalysis, cross_host, on_each_host
from tftrace.analysis.cluster.host import summarize_and_keep
from tftrace.analysis.cluster.layout import find_hosts
from tftrace.analysis.diff.result import records
from tftrace.analysis.diff.stats import StepTimeDiff, compare_steps
from tftrace.analysis.presenting import as_html, as_text

if TYPE_CHECKING:
    from tftrace.analysis.diff.result import RunDiff

HOST_COLUMNS = ("host", "verdict", "speedup", "a_median_ms", "b_median_ms", "p_value", "problem")
WORKER_FIGURES = ("step_ms", "period_ms", "wait_ms", "own_ms")


def job_periods(c: ClusterAnalysis) -> np.ndarray:
    """The job's step period per matched step (ms): the median over its hosts of the time
    from the step's start to the next's (the last step has none)."""
    if not len(c.steps) or "period_ms" not in c.steps:
        return np.zeros(0)
    per_step = c.steps.dropna(subset=["period_ms"]).groupby("step")["period_ms"].median()
    return per_step.to_numpy(dtype=np.float64)


@dataclass(frozen=True, repr=False)
class ClusterDiff:
    """Job B against job A (the baseline), host by host, matched by host name.

    Attributes:

    - ``a``, ``b``: each side's ``ClusterAnalysis`` (its ``workers`` table, its
      ``straggler``).
    - ``job``: a ``StepTimeDiff`` of the job's step period per matched step (the median over
      its hosts): ``speedup`` above 1 means B's job is faster, with its ``verdict``.
    - ``diffs``: host -> the ``RunDiff`` of that host's run in A and in B.
    - ``problems``: host -> why that host, present on both sides, was not compared.
    - ``only_a``, ``only_b``: hosts that only one side has.

    ``print(d)`` gives the terminal text, ``d.to_json()`` every figure (each host's whole
    ``RunDiff`` too), ``d.to_html()`` a self-contained page. Example::

        d = tftrace.diff_clusters("runs/job-before", "runs/job-after")
        d.job.verdict, d.job.speedup  # "faster", 3.1
        d.hosts[["host", "verdict", "speedup"]]
        d.workers  # step, period, wait and own ms of every worker in A and in B
    """

    a: ClusterAnalysis
    b: ClusterAnalysis
    job: StepTimeDiff
    diffs: dict[str, RunDiff] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def only_a(self) -> tuple[str, ...]:
        theirs = {h.name for h in self.b.hosts}
        return tuple(h.name for h in self.a.hosts if h.name not in theirs)

    @property
    def only_b(self) -> tuple[str, ...]:
        theirs = {h.name for h in self.a.hosts}
        return tuple(h.name for h in self.b.hosts if h.name not in theirs)

    @property
    def hosts(self) -> pd.DataFrame:
        """One row per host on both sides (``HOST_COLUMNS``): its step-time verdict and
        speedup (B against A), both medians and the p-value; or why it was not compared."""
        rows: list[tuple[Any, ...]] = []
        for h in self.a.hosts:
            if h.name in self.diffs:
                st = self.diffs[h.name].step_time
                medians = (st.a.median_ms, st.b.median_ms)
                rows.append((h.name, st.verdict, st.speedup, *medians, st.p_value, None))
            elif h.name in self.problems:
                rows.append((h.name, "not compared", *([np.nan] * 4), self.problems[h.name]))
        frame = pd.DataFrame(rows, columns=list(HOST_COLUMNS))
        for column in ("speedup", "a_median_ms", "b_median_ms", "p_value"):
            frame[column] = frame[column].astype(np.float64)
        return frame

    @property
    def workers(self) -> pd.DataFrame:
        """Each worker's medians over its job's matched steps in A and in B: host, then
        ``<figure>_a`` and ``<figure>_b`` for step, period, wait and own time (ms); a host
        on one side only has NaN on the other."""
        sides = []
        for side, c in (("a", self.a), ("b", self.b)):
            w = c.workers[["host", *WORKER_FIGURES]].set_index("host")
            sides.append(w.add_suffix(f"_{side}"))
        both = sides[0].join(sides[1], how="outer")
        order = [*(h.name for h in self.a.hosts), *self.only_b]
        both = both.reindex([h for h in order if h in both.index])
        columns = [f"{f}_{s}" for f in WORKER_FIGURES for s in ("a", "b")]
        return both[columns].rename_axis("host").reset_index()

    def to_json(self) -> dict[str, Any]:
        """Every figure as plain JSON values (what ``tftrace diff DIR_A DIR_B --json`` prints):
        the job's period, the hosts, the workers, the stragglers and each host's RunDiff."""
        return {
            "kind": "cluster-diff",
            "a": str(self.a.path),
            "b": str(self.b.path),
            "job": self.job.to_json(),
            "hosts": records(self.hosts),
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
            "workers": records(self.workers),
            "straggler": {"a": self.a.straggler, "b": self.b.straggler},
            "lost": {"a": list(self.a.lost), "b": list(self.b.lost)},
            "diffs": {name: d.to_json() for name, d in self.diffs.items()},
            "problems": dict(self.problems),
        }

    def to_html(self) -> str:
        """A self-contained HTML page of the comparison (each host's whole diff included)."""
        return as_html(self)

    def __repr__(self) -> str:
        return (
            f"<ClusterDiff {self.a.path} -> {self.b.path}: job {self.job.verdict}, "
            f"{len(self.diffs)} hosts compared>"
        )

    def __str__(self) -> str:
        return as_text(self)


def diff_clusters(
    a: str | os.PathLike[str] | ClusterAnalysis,
    b: str | os.PathLike[str] | ClusterAnalysis,
    *,
    window: str = "steady",
    warmup_steps: int = 1,
    cpus: int | None = None,
    executor: Executor | None = None,
) -> ClusterDiff:
    """Compare two multi-host directories of one job, host by host.

    Args:
        a, b: each a multi-host directory (``tftrace record -o DIR/{task}``) or its
            ``ClusterAnalysis`` (``tftrace.analyze_cluster``). A is the baseline: a speedup
            above 1 means B is faster.
        window, warmup_steps, cpus: each host's, as for ``tftrace.diff``: in its diff and
            in its side's cross-host view alike.
        executor: where each side's hosts are analysed for the cross-host view (as for
            ``tftrace.analyze_cluster``; default a process pool).

    Returns:
        A ``ClusterDiff``: the job's step period per matched step with a verdict (a rank test
        and a bootstrap interval, as ``tftrace.diff`` judges step time); each host present on
        both sides compared with ``tftrace.diff`` (its ``RunDiff``), or the one-line reason it
        could not be (a host without a trace, other workloads); each side's workers table and
        straggler; the hosts only one side has.

    Raises:
        NotAClusterDir (a ``TftraceError``) when a directory holds no host's run.

    Example::

        d = tftrace.diff_clusters("runs/job-before", "runs/job-after")
        print(d)  # the job's verdict, then each host's, the workers and the stragglers
        d.diffs["worker-1"].step_time.reason
    """
    from tftrace.analysis.diff import diff
    from tftrace.analysis.metrics.window import parse_window
    from tftrace.analysis.model.run import load
    from tftrace.errors import TftraceError

    parse_window(window, warmup_steps)  # a bad window: one error, not one per host
    options: dict[str, Any] = {"window": window, "warmup_steps": warmup_steps, "cpus": cpus}
    (ca, kept_a), (cb, kept_b) = (_side(c, executor, options) for c in (a, b))
    theirs = {h.name: h for h in cb.hosts}
    diffs: dict[str, RunDiff] = {}
    problems: dict[str, str] = {}
    for host in ca.hosts:
        other = theirs.get(host.name)
        if other is None:
            continue
        lost = [f"{s} {h.error}" for s, h in (("A:", host), ("B:", other)) if h.error]
        if lost:
            problems[host.name] = "; ".join(lost)
            continue
        try:
            # each host's analysis made for the cross-host view, where this call made it
            diffs[host.name] = diff(
                kept_a.get(host.name) or load(host.path),
                kept_b.get(other.name) or load(other.path),
                **options,
            )
        except TftraceError as e:
            problems[host.name] = str(e)
        except Exception as e:  # one host's bad data must not lose the others' comparisons
            problems[host.name] = f"{type(e).__name__}: {e}"
    job = compare_steps(job_periods(ca), job_periods(cb))
    return ClusterDiff(ca, cb, job, diffs, problems)


def _side(
    side: str | os.PathLike[str] | ClusterAnalysis,
    executor: Executor | None,
    options: dict[str, Any],
) -> tuple[ClusterAnalysis, dict[str, Any]]:
    """One side's cross-host view, with each host's Analysis where it was made here (a
    ``ClusterAnalysis`` given keeps only summaries: its hosts are analysed again to diff)."""
    if isinstance(side, ClusterAnalysis):
        return side, {}
    layout = find_hosts(Path(side))
    args = (options["window"], options["warmup_steps"], options["cpus"])
    done = on_each_host(layout, summarize_and_keep, args, executor)
    summaries = [summary for summary, _ in done]
    kept = {s.name: analysis for s, analysis in done if analysis is not None}
    return cross_host(layout.path, summaries, layout.missing), kept
