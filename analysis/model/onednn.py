"""Whether TF ran its oneDNN kernels: the workload's own answer from the manifest, else
inferred from the kernel names in the trace (a bare trace, or a run recorded before the
manifest held it).

Analyses never depend on it (op types are normalised, ``vocabulary.op_type_of_kernel``); it is
shown because oneDNN changes which kernels ran and how they use the pools.
"""

from __future__ import annotations

from collections.abc import Iterable

from tftrace.analysis.model.vocabulary import (
    ONEDNN_ENV,
    ONEDNN_REWRITTEN_OPS,
    is_onednn_kernel,
)
from tftrace.tracer.manifest_reader import Manifest


def _recorded(manifest: Manifest) -> str | None:
    onednn = manifest.workload.onednn
    if onednn is None or onednn.enabled is None:
        return None
    env = f"{ONEDNN_ENV}={onednn.env}" if onednn.env is not None else f"{ONEDNN_ENV} unset"
    default = ": TF's default for this CPU" if onednn.env is None else ""
    return f"{'on' if onednn.enabled else 'off'} (TensorFlow's answer; {env}{default})"


def _inferred(op_kernels: Iterable[str]) -> str:
    kernels = sorted(set(op_kernels))
    onednn = [k for k in kernels if is_onednn_kernel(k)]
    if onednn:
        shown = ", ".join(onednn[:3]) + (", ..." if len(onednn) > 3 else "")
        return f"on (inferred from op names: {shown})"
    plain = [k for k in kernels if k in ONEDNN_REWRITTEN_OPS]
    if plain:
        return f"off (inferred from op names: {', '.join(plain[:3])} ran as TF's own kernel)"
    return "unknown (no op in the trace that oneDNN would have replaced)"


def onednn_text(manifest: Manifest, op_kernels: Iterable[str] | None = None) -> str:
    """ "on (...)", "off (...)" or "unknown (...)", saying how it is known.

    ``op_kernels``: the op types as the trace names them (the events' ``op_kernel``); None
    when the trace was not read (``tftrace summary``).
    """
    recorded = _recorded(manifest)
    if recorded is not None:
        return recorded
    if op_kernels is None:
        reason = manifest.workload.onednn.reason if manifest.workload.onednn else None
        return (
            f"unknown ({reason or 'not in the manifest'}; tftrace report infers it from op names)"
        )
    return _inferred(op_kernels)
