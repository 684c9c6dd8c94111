"""What differs between two runs' manifests that can explain a change: the workload's own
files (by sha256), versions, the environment that sizes pools and picks kernels, pool sizes
and where they came from, the CPUs, oneDNN; and whether the two runs are of the same
workload at all.

Every value is shown as text, "-" where a manifest does not say.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

import pandas as pd

from tftrace.errors import TftraceError
from tftrace.tracer.manifest_reader import Manifest

COLUMNS = ("what", "a", "b")
MISSING = "-"
POOLS = ("inter_op", "intra_op")


class RunsNotComparable(TftraceError):
    """Two runs that ``tftrace diff`` cannot compare (different workloads, a missing trace,
    no steady steps); the message says why in one line."""


def workload_of(manifest: Manifest) -> str | None:
    """The workload as ``python`` ran it (``script /abs/path.py`` or ``module pkg.mod``),
    without its arguments; None where the manifest does not say (a bare trace)."""
    target = manifest.target
    if target is None:
        return None
    value = target.value
    cwd = manifest.raw.get("cwd")
    if target.kind in ("script", "code") and isinstance(cwd, str) and value != "<interactive>":
        value = str(PurePath(cwd, value))  # absolute values stay as they are
    return f"{target.kind} {value}"


def check_same_workload(a: Manifest, b: Manifest, a_name: str, b_name: str) -> None:
    """Raise ``RunsNotComparable`` when both manifests name their workload and the two differ
    (in script, module or how it was run; its arguments may differ)."""
    wa, wb = workload_of(a), workload_of(b)
    if wa is not None and wb is not None and wa != wb:
        raise RunsNotComparable(
            f"{a_name} and {b_name} ran different workloads ({wa} against {wb}): a diff "
            "compares one workload under two settings, versions or machines"
        )


def _text(value: object) -> str:
    if value is None or value == "" or value == ():
        return MISSING
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _cpu_list(cpus: Iterable[int]) -> str:
    """``0-3,6``: a CPU list as the kernel writes one."""
    ranges: list[str] = []
    start = prev = None
    for c in sorted(cpus):
        if prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            ranges.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = c
    if start is not None:
        ranges.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(ranges)


def _onednn(m: Manifest) -> tuple[str, str]:
    d = m.workload.onednn
    if d is None:
        return MISSING, MISSING
    return _text(d.enabled), _text(d.env)


def _host_field(m: Manifest, key: str) -> object:
    host = m.raw.get("host")
    return host.get(key) if isinstance(host, dict) else None


def manifest_pairs(m: Manifest) -> dict[str, str]:
    """Every compared fact of one manifest, by name, as text."""
    facts: dict[str, str] = {"tftrace version": _text(m.raw.get("tftrace_version"))}
    facts["workload"] = _text(workload_of(m))
    facts["workload args"] = _text(" ".join(m.target.args) if m.target else None)
    target = m.raw.get("target")
    facts["workload file (sha256)"] = _text(
        target.get("sha256") if isinstance(target, dict) else None
    )
    for path, digest in sorted(m.workload.sources.items()):
        facts[f"source {path} (sha256)"] = digest[:16]
    for name, version in sorted(m.versions.items()):
        facts[f"version {name}"] = _text(version)
    facts["TensorFlow (workload)"] = _text(m.workload.tensorflow_version)
    for name, value in sorted(m.env.items()):
        facts[f"env {name}"] = _text(value)
    for pool in POOLS:
        setting = m.pool(pool)
        facts[f"{pool} pool size"] = _text(setting.size)
        facts[f"{pool} pool size from"] = _text(setting.source)
    facts["usable CPUs"] = _text(m.usable_cpus)
    facts["CPU count (machine)"] = _text(m.host.cpu_count)
    facts["CPU affinity"] = _text(_cpu_list(m.host.cpu_affinity))
    facts["CPU quota"] = _text(m.host.cpu_quota)
    facts["CPU model"] = _text(_host_field(m, "cpu_model"))
    facts["machine"] = _text(_host_field(m, "machine"))
    facts["host"] = _text(m.host.hostname)
    facts["platform"] = _text(m.host.platform)
    facts["oneDNN"], facts["env TF_ENABLE_ONEDNN_OPTS (workload)"] = _onednn(m)
    return facts


def manifest_differences(a: Manifest, b: Manifest) -> pd.DataFrame:
    """One row (``COLUMNS``: what, a, b) per compared fact whose value differs; environment
    variables set on one side only show "-" on the other."""
    fa, fb = manifest_pairs(a), manifest_pairs(b)
    rows = []
    for what in dict.fromkeys([*fa, *fb]):
        va, vb = fa.get(what, MISSING), fb.get(what, MISSING)
        if va != vb:
            rows.append((what, va, vb))
    return pd.DataFrame(rows, columns=list(COLUMNS))
