"""Build ``manifest.json``: what was run, where, with which settings, and what each source got.

Every later step reads it back through ``manifest_reader.Manifest``, which documents each field.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tftrace.analysis.model.vocabulary import PROFILE_VIEWER_DISTRIBUTIONS, TF_DISTRIBUTIONS
from tftrace.version import __version__

from .cluster_task import TaskError, clock_sync, task_of
from .environment import (
    POOL_ENV_VARS,
    distribution_version,
    file_digest,
    host_facts,
    relevant_env,
    resolve_pool_size,
)
from .manifest_reader import MANIFEST_KIND
from .options import RecordOptions
from .rundir import SCHEMA_VERSION, RunDir
from .step_range import STEPS_COUNTED

TRACKED_DISTRIBUTIONS = (
    *TF_DISTRIBUTIONS,
    *PROFILE_VIEWER_DISTRIBUTIONS,
    "py-spy",
    "numpy",
    "protobuf",
)


def initial(
    options: RecordOptions,
    run: RunDir,
    env: dict[str, str],
    start_anchor: dict[str, int],
    how: str = "record",
) -> dict[str, Any]:
    """The manifest as the run starts. ``how`` says what recorded it: ``"record"`` for
    ``tftrace record`` / ``tftrace.record`` (``manifest_reader.Recording``). A workload pinned
    to some CPUs (``options.cpu_affinity``: a sweep's copies) has those as the host's
    ``cpu_affinity``, the CPUs it may use, and ``recording.pinned_cpus`` says tftrace pinned it."""
    host = host_facts()
    if options.cpu_affinity is not None:
        host["cpu_affinity"] = sorted(options.cpu_affinity)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": MANIFEST_KIND,
        "tftrace_version": __version__,
        "status": "running",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "name": options.name,
        "run_dir": str(run.path.resolve()),
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "target": target_block(options),
        "workload_command": [sys.executable, *options.target.argv()],
        "recording": {
            "how": how,
            "steps": list(options.steps) if options.steps is not None else None,
            "steps_counted": STEPS_COUNTED,
            **({"pinned_cpus": host["cpu_affinity"]} if options.cpu_affinity is not None else {}),
        },
        "host": host,
        "versions": {
            "python": sys.version.split()[0],
            **distribution_version(*TRACKED_DISTRIBUTIONS),
        },
        "env": relevant_env(env),
        "options": {
            "tf_profiler": options.tf_profiler,
            "delay_s": options.delay_s,
            "duration_s": options.duration_s,
            "pyspy": options.pyspy,
            "pyspy_rate": options.pyspy_rate,
            "pyspy_native": options.pyspy_native,
            "sampler": options.sampler,
            "sample_hz": options.sample_hz,
            "machine_hz": options.machine_hz if options.sampler else 0,
        },
        "clock": {"start": start_anchor, "sync": clock_sync()},
        "cluster": cluster_block(env),
        "sources": {},
    }


def pools(
    report: dict[str, Any] | None, env: dict[str, str], affinity: list[int]
) -> dict[str, Any]:
    """Effective pool sizes with the reason for each (config, env var or default)."""
    configured = (report or {}).get("configured_pools") or {}
    cpus = len((report or {}).get("cpu_affinity") or affinity)
    out = {}
    for pool, var in POOL_ENV_VARS.items():
        value = int(configured.get(pool, 0) or 0)
        resolved = resolve_pool_size(value, env.get(var), cpus)
        out[pool] = {
            **resolved,
            "configured": value,
            "env": env.get(var),
            "cpus": cpus,
            "config_known": bool(configured),
        }
    return out


def files_present(run: RunDir) -> list[str]:
    return sorted(
        str(p.relative_to(run.path))
        for p in run.path.rglob("*")
        if p.is_file() and not p.name.endswith(".tmp")
    )


def final_status(interrupted: bool, report: dict[str, Any] | None) -> str:
    if interrupted or (report or {}).get("interrupted"):
        return "interrupted"
    if report is None:
        return "crashed"  # the workload died without writing its report (e.g. a signal)
    if report.get("setup_error"):
        return "failed"
    return "complete"


def target_block(options: RecordOptions) -> dict[str, Any]:
    """What runs; a script with its sha256, so that a diff can tell an edited script."""
    target = options.target
    block: dict[str, Any] = {"kind": target.kind, "value": target.value, "args": list(target.args)}
    if target.kind == "script":
        block["sha256"] = file_digest(target.value)
    return block


def cluster_block(env: dict[str, str]) -> dict[str, Any] | None:
    """This process's task of a distributed job (TF_CONFIG), None outside one."""
    try:
        return task_of(env)
    except TaskError as e:
        return {"error": str(e)}


def workload_section(report: dict[str, Any] | None, returncode: int | None) -> dict[str, Any]:
    section: dict[str, Any] = {
        "returncode": returncode,
        "signal": -returncode if returncode and returncode < 0 else None,
        "stdout": "workload/stdout.log",
        "stderr": "workload/stderr.log",
    }
    if report is None:
        section["report"] = "missing: the workload process ended before writing it"
        return section
    for key in (
        "pid",
        "exit_code",
        "exception",
        "interrupted",
        "setup_error",
        "setter_calls",
        "configured_pools",
        "tensorflow_version",
        "cpu_affinity",
        "onednn",
        "sources",
    ):
        section[key] = report.get(key)
    return section
