"""What the recorded process says of itself (``workload/report.json``), and whom it lets read
it. Shared by the launched workload's bootstrap and by ``tftrace.profile`` inside a program."""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from tftrace.analysis.model.vocabulary import ONEDNN_ENV

from ..environment import clock_anchor
from . import setter_calls
from .sources_digest import workload_sources

PR_SET_PTRACER = 0x59616D61
# The run directory of the ``tftrace record`` that launched this process, once its bootstrap
# ran: ``tftrace.profile`` inside it would only record the same threads a second time.
launched_into: list[str] = []


def allow_tracer(pid: int) -> None:
    """Let ``pid`` and its children read this process: py-spy, which is not its ancestor.

    Under Yama ptrace_scope=1 only ancestors may attach; PR_SET_PTRACER names another
    allowed tracer. Without Yama it is a no-op.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PTRACER, pid, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def new_report(target: dict[str, Any]) -> dict[str, Any]:
    """The report as the recording starts; the end fills in the rest."""
    return {
        "pid": os.getpid(),
        "target": target,
        "start_anchor": clock_anchor(),
        "setter_calls": [],
        "interrupted": False,
        "exception": None,
        "setup_error": None,
    }


def describe_tf(report: dict[str, Any]) -> None:
    """The CPUs, TF's pool settings and version, and oneDNN, as the process ends."""
    try:
        report["cpu_affinity"] = sorted(os.sched_getaffinity(0))
        report["configured_pools"] = setter_calls.configured_pool_sizes()
        tf = sys.modules.get("tensorflow")
        report["tensorflow_version"] = getattr(tf, "__version__", None)
    except Exception as e:
        report["configured_pools_error"] = f"{type(e).__name__}: {e}"
    report["onednn"] = _onednn(tf_loaded="tensorflow" in sys.modules)
    try:
        target = report.get("target") or {}
        script = target.get("value") if target.get("kind") == "script" else None
        report["sources"] = workload_sources(script=script)
    except Exception as e:  # never lose the run over a digest
        report["sources_error"] = f"{type(e).__name__}: {e}"


def _onednn(tf_loaded: bool) -> dict[str, Any]:
    """Whether TF ran its oneDNN kernels, by TF's own answer, beside the variable that forces
    it. TF's default depends on the CPU (on with AVX-512-class features), so the variable
    alone does not say. TF is asked only when the workload imported it."""
    answer: dict[str, Any] = {"enabled": None, "env": os.environ.get(ONEDNN_ENV)}
    if not tf_loaded:
        answer["reason"] = "the workload did not import tensorflow"
        return answer
    try:
        from tensorflow.python.util import _pywrap_util_port  # TF's own test, not public API

        answer["enabled"] = bool(_pywrap_util_port.IsMklEnabled())
    except Exception as e:  # a TF without it (older or newer): say so, infer from the trace
        answer["reason"] = f"{type(e).__name__}: {e}"
    return answer
