"""What a verification runs: the setting a finding advises, made whole from the run's own
(pool sizes, the variables it names, its CPUs), and the recorded workload to run it on."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterable
from pathlib import Path

from tftrace.analysis.findings.finding import AdvisedSetting, Finding
from tftrace.analysis.model.run import Run
from tftrace.errors import TftraceError
from tftrace.tracer.environment import relevant_env
from tftrace.tracer.options import Target
from tftrace.tracer.sweep import Setting


class VerifyError(TftraceError):
    """A run that cannot be verified: a bare trace, a workload that is gone, unknown sizes."""


def advised(
    setting: AdvisedSetting, current: Setting, sized_by_cpus: Collection[str] = ()
) -> Setting:
    """The whole setting a finding advises: its pool sizes, with the run's own where it
    keeps a pool (but where TF sized that pool by the CPUs, ``sized_by_cpus``, and the advice
    pins the process to K of them, K, as TF would); the run's own value of each variable it
    does not set; and its CPUs (None: all usable, as the run's own)."""

    def pool(value: int | None, own: int | None, name: str) -> int | None:
        if value is not None:
            return value
        return setting.cpus if setting.cpus is not None and name in sized_by_cpus else own

    env = dict(current.env_vars) | dict(setting.env)
    return Setting(
        pool(setting.intra, current.intra, "intra"),
        pool(setting.inter, current.inter, "inter"),
        env_vars=tuple(env.items()),
        cpus=setting.cpus,
    )


def current_setting(run: Run, findings: Iterable[Finding] = ()) -> Setting:
    """The setting the run had, as numbers (a verify run must reproduce it): its pool sizes,
    and its value of every variable the ``findings`` advise (None: it was unset)."""
    intra, inter = run.manifest.pool("intra_op").size, run.manifest.pool("inter_op").size
    if not intra or not inter:
        raise VerifyError(
            f"{run.path}: the manifest does not say the pool sizes the run had; --verify "
            "needs them to re-run the workload as it was"
        )
    names = dict.fromkeys(n for f in findings if f.setting for n in f.setting.env)
    return Setting(intra, inter, env_vars=tuple((n, recorded_value(run, n)) for n in names))


def recorded_value(run: Run, name: str) -> str | None:
    """The run's value of variable ``name`` (None: unset). The manifest keeps the variables
    that size threads (``environment.RECORDED_ENV_VARS``: TF_NUM_*, OMP_NUM_THREADS, ...);
    of another it keeps nothing, so the value this process has stands in for it."""
    if relevant_env({name: ""}):
        return run.manifest.env.get(name)
    return os.environ.get(name)


def sized_by_cpus(run: Run) -> frozenset[str]:
    """The pools ("intra", "inter") whose size TF chose by the CPUs (its default)."""
    pools = {"intra": "intra_op", "inter": "inter_op"}
    return frozenset(
        key
        for key, pool in pools.items()
        if (run.manifest.pool(pool).source or "").startswith("default")
    )


def workload_of(run: Run) -> Target:
    """The recorded workload, its script's path made absolute from the recorded directory."""
    target = run.manifest.target
    if not run.manifest.exists or target is None:
        raise VerifyError(
            f"{run.path}: --verify re-runs the recorded workload, so it needs a run directory "
            "written by `tftrace record`, not a bare trace"
        )
    if target.kind != "script":
        return target
    cwd = run.manifest.raw.get("cwd")
    script = Path(target.value)
    if not script.is_absolute() and isinstance(cwd, str):
        script = Path(cwd) / script
    if not script.is_file():
        raise VerifyError(f"{run.path}: the recorded workload {script} no longer exists")
    return dataclasses.replace(target, value=str(script))
