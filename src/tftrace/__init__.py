"""tftrace: see what TensorFlow's CPU thread pools do, and why cores sit idle.

The front door, in the order the data flows::

    import tftrace

    result = tftrace.record("train.py", ["--steps", "50"])  # run under the profilers
    with tftrace.profile("runs/fit"):  # or record a block of this program
        model.fit(dataset, epochs=1)
    tftrace.serve(6009)  # or let `tftrace capture` record it on demand, every host at once
    run = tftrace.load(result.run.path)  # the run as DataFrames
    analysis = tftrace.analyze(run)  # metrics and findings
    checked = tftrace.verify(run, analysis)  # each advised setting timed beside the run's
    print(analysis)  # the terminal report; in Jupyter, the report's tables
    best = tftrace.sweep("train.py", intra="1,2,4")  # time several thread settings
    change = tftrace.diff(run, tftrace.load("runs/other"))  # what changed, and is it real
    guess = tftrace.predict(run, intra=(1, 2, 4))  # each setting's step time, not run
    told = tftrace.with_predictions(run, analysis)  # each finding's advice, predicted
    job = tftrace.analyze_cluster("runs/job")  # hosts of a distributed job: the straggler
    jobs = tftrace.diff_clusters("runs/job", "runs/job2")  # two jobs, host by host

``record``, ``load``, ``analyze``, ``verify``, ``sweep``, ``diff`` and ``predict`` are what the
``tftrace`` command line calls too. Every user-facing failure raises a ``TftraceError``.

Importing ``tftrace`` is light (no pandas, numpy or TensorFlow): it is imported inside the
workload's own process. Each name below loads its module on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tftrace.errors import TftraceError
from tftrace.version import __version__

# public name -> module that defines it, imported when the name is first used
_LAZY = {
    "record": "tftrace.tracer.recording",
    "profile": "tftrace.tracer.in_process",
    "serve": "tftrace.tracer.serve",
    "Profile": "tftrace.tracer.in_process",
    "RecordResult": "tftrace.tracer.recorder",
    "Target": "tftrace.tracer.options",
    "load": "tftrace.analysis.model.run",
    "Run": "tftrace.analysis.model.run",
    "analyze": "tftrace.analysis.analyze",
    "Analysis": "tftrace.analysis.analyze",
    "Finding": "tftrace.analysis.findings.finding",
    "Severity": "tftrace.analysis.findings.finding",
    "sweep": "tftrace.analysis.sweep.session",
    "SweepResult": "tftrace.analysis.sweep.outcome",
    "verify": "tftrace.analysis.sweep.verify",
    "diff": "tftrace.analysis.diff",
    "predict": "tftrace.analysis.predict",
    "Prediction": "tftrace.analysis.predict",
    "with_predictions": "tftrace.analysis.predict.advice",
    "PredictedGain": "tftrace.analysis.findings.finding",
    "RunDiff": "tftrace.analysis.diff",
    "analyze_cluster": "tftrace.analysis.cluster",
    "ClusterAnalysis": "tftrace.analysis.cluster",
    "diff_clusters": "tftrace.analysis.cluster.diff",
    "Verification": "tftrace.analysis.findings.finding",
    "AdvisedSetting": "tftrace.analysis.findings.finding",
}

__all__ = [
    "AdvisedSetting",
    "Analysis",
    "ClusterAnalysis",
    "Finding",
    "PredictedGain",
    "Prediction",
    "Profile",
    "RecordResult",
    "Run",
    "RunDiff",
    "Severity",
    "SweepResult",
    "Target",
    "TftraceError",
    "Verification",
    "__version__",
    "analyze",
    "analyze_cluster",
    "diff",
    "diff_clusters",
    "load",
    "predict",
    "profile",
    "record",
    "serve",
    "sweep",
    "verify",
    "with_predictions",
]

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis, analyze
    from tftrace.analysis.cluster import ClusterAnalysis, analyze_cluster
    from tftrace.analysis.cluster.diff import diff_clusters
    from tftrace.analysis.diff import RunDiff, diff
    from tftrace.analysis.findings.finding import (
        AdvisedSetting,
        Finding,
        PredictedGain,
        Severity,
        Verification,
    )
    from tftrace.analysis.model.run import Run, load
    from tftrace.analysis.predict import Prediction, predict
    from tftrace.analysis.predict.advice import with_predictions
    from tftrace.analysis.sweep.outcome import SweepResult
    from tftrace.analysis.sweep.session import sweep
    from tftrace.analysis.sweep.verify import verify
    from tftrace.tracer.in_process import Profile, profile
    from tftrace.tracer.options import Target
    from tftrace.tracer.recorder import RecordResult
    from tftrace.tracer.recording import record
    from tftrace.tracer.serve import serve


def __getattr__(name: str) -> Any:
    if name == "keras":  # tftrace.keras.ProfileCallback: imports Keras, so only on use
        return importlib.import_module("tftrace.keras")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tftrace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
