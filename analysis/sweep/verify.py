"""``tftrace.verify()``: check a run's findings by experiment.

A finding whose action is a thread setting says so machine-readably (``Finding.setting``). Its
claim is tested the way a sweep tests a setting: the recorded workload runs again under the
advised setting and under the run's own, in fresh processes, interleaved, ``repeat`` times
each, timed over its steady steps (``session.sweep_settings``). A finding that expects its
setting to be faster is confirmed when it is, beyond noise (a one-sided Mann-Whitney U test at
``stats.ALPHA`` and a typical gain of at least ``stats.MIN_GAIN``); one that expects threads to
be wasted (``Expect.NOT_SLOWER``) is confirmed unless its setting is slower beyond noise or
typically more than ``NOT_SLOWER_TOLERANCE`` slower (``verify_judge.py``). Where noise leaves
that open (not slower beyond noise, but typically more than the tolerance slower), the two
settings run as many times again and the verdict is taken over all their runs. The runs stay in
the run directory (``RUN/verify/``, a sweep directory: ``tftrace summary RUN/verify`` shows them
again; the added ones in ``RUN/verify/more/``).

Each finding is judged by its setting's ``objective``: None, the workload's time per step (a
server's runs are timed by their requests, so that is seconds per request); ``"throughput"``,
steps or requests per second (the claim: more of them; compared as seconds per one); ``"p50"``
or ``"p99"``, the latency percentile of the runs' requests (the claim: a lower one). The
same timed runs serve every objective; the reason names the measure.

A setting may go beyond the pools: its ``env`` variables are set in the advised runs' environment
and its ``cpus`` pins them to the first K of the CPUs this process may use. The run's own
setting keeps the value the recording had of each variable any finding advises (the manifest's
``env``; unset where the recording did not have it), so that both sides differ in the advice
alone.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import pandas as pd

from tftrace.analysis.analyze import Analysis, analyze
from tftrace.analysis.findings.finding import (
    AdvisedSetting,
    Finding,
    Status,
    Verification,
)
from tftrace.analysis.model.run import Run
from tftrace.analysis.sweep.result import load_sweep
from tftrace.analysis.sweep.session import SweepProgress, sweep_settings
from tftrace.analysis.sweep.stats import (
    setting_of,
)
from tftrace.analysis.sweep.timing import Objective, TimingError, as_objective
from tftrace.analysis.sweep.verify_judge import (  # noqa: F401  (re-exported)
    NOT_SLOWER_TOLERANCE,
    compare,
    judge,
    open_to_noise,
)
from tftrace.analysis.sweep.verify_setting import (  # noqa: F401  (re-exported: the API's names)
    VerifyError,
    advised,
    current_setting,
    recorded_value,
    sized_by_cpus,
    workload_of,
)
from tftrace.errors import TftraceError
from tftrace.tracer.options import DEFAULT_VERIFY_REPEAT
from tftrace.tracer.sweep import Setting

VERIFY_DIR = "verify"
# A "not slower" verdict that noise leaves open (not slower beyond noise, but typically more
# than the tolerance slower) is judged again over as many runs more, kept in VERIFY_DIR/MORE_DIR:
# at the ~10 % run-to-run spread of millisecond steps on a shared machine, three runs each
# call an equal setting "typically slower" about one time in five.
MORE_DIR = "more"


def _unchanged(f: Finding, now: Setting) -> Finding:
    """A finding whose advised setting is the run's own: inconclusive, nothing was run."""
    if f.setting is None:
        return f
    sizes, env = (now.intra, now.inter), _named(now, f.setting)
    check = Verification(
        Status.INCONCLUSIVE,
        sizes,
        sizes,
        1.0,
        1.0,
        1.0,
        0,
        "the advised setting is the run's own",
        current_env=env,
        advised_env=env,
        current_cpus=now.cpus,
        advised_cpus=now.cpus,
    )
    return dataclasses.replace(f, verification=check)


def _named(setting: Setting, advice: AdvisedSetting) -> dict[str, str | None]:
    """``setting``'s values of the variables ``advice`` sets."""
    return {n: v for n, v in setting.env_vars if n in advice.env}


def _as_advised(setting: Setting, advice: AdvisedSetting) -> Setting:
    """``setting`` with only the variables ``advice`` sets: what a finding's reason names."""
    return dataclasses.replace(setting, env_vars=tuple(_named(setting, advice).items()))


def _next_free(path: Path) -> Path:
    n = 1
    candidate = path
    while candidate.exists() and any(candidate.iterdir()):
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def verify(
    run: Run,
    analysis: Analysis | None = None,
    *,
    repeat: int = DEFAULT_VERIFY_REPEAT,
    warmup_steps: int = 1,
    output: str | os.PathLike[str] | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
) -> Analysis:
    """Run every finding's advised setting beside the run's own; mark each confirmed or not,
    with the measured speedup. A setting's variables are set in the advised runs'
    environment (the run's own runs keep the recording's values) and its ``cpus`` pins them.

    Args:
        run: a run recorded by ``tftrace.record`` (its manifest names the workload and the
            pool sizes it ran with); the workload is run again, so it must still exist.
        analysis: the run's analysis, whose findings are verified (default: ``analyze(run)``).
        repeat: timed runs per setting (3 or more to judge noise; default 7).
        warmup_steps: steps left out before the timed steady state starts.
        output: the sweep directory for the runs (default: ``RUN/verify``, or ``verify-2``...
            when that holds an earlier verification).
        progress: called with a ``SweepProgress`` as each run starts and ends.

    Returns:
        The ``Analysis`` with each finding that advises a setting carrying a ``Verification``
        (``status``: confirmed, not confirmed or inconclusive; ``speedup``; ``reason``);
        unchanged when no finding advises a setting (nothing is run).

    Raises:
        VerifyError: a bare trace, a workload that no longer exists, unknown pool sizes.
        SweepError, TimingError: a run that fails or cannot be timed.

    Example::

        import tftrace

        run = tftrace.load("tftrace-runs/demo")
        for f in tftrace.verify(run).findings:
            if f.verification:
                print(f.id, f.verification.status.value, f"{f.verification.speedup:.2f}x")
    """
    analysis = analysis if analysis is not None else analyze(run)
    if not any(f.setting for f in analysis.findings):
        return analysis
    target = workload_of(run)
    now, by_cpus = current_setting(run, analysis.findings), sized_by_cpus(run)
    wanted = {f.id: advised(f.setting, now, by_cpus) for f in analysis.findings if f.setting}
    settings = list(dict.fromkeys([now, *wanted.values()]))
    if len(settings) == 1:  # every advice is the run's own setting: nothing to compare
        return dataclasses.replace(
            analysis, findings=tuple(_unchanged(f, now) for f in analysis.findings)
        )
    out = _next_free(Path(run.path) / VERIFY_DIR) if output is None else Path(output)
    result = sweep_settings(
        target,
        settings,
        baseline=now,
        repeat=repeat,
        warmup_steps=warmup_steps,
        output=out,
        progress=progress,
    )
    runs = result.runs
    unsure = _left_open(analysis.findings, runs, now, by_cpus)
    if unsure:
        more = sweep_settings(
            target,
            [now, *unsure],
            baseline=now,
            repeat=repeat,
            warmup_steps=warmup_steps,
            output=out / MORE_DIR,
            progress=progress,
        )
        runs = pd.concat([runs, more.runs], ignore_index=True)
    return mark(analysis, runs, now, out, by_cpus)


def _left_open(
    findings: Sequence[Finding], runs: pd.DataFrame, now: Setting, by_cpus: Collection[str]
) -> list[Setting]:
    """The advised settings of the findings whose verdict ``open_to_noise`` leaves open."""
    unsure: list[Setting] = []
    for f in findings:
        if f.setting is None:
            continue
        setting = advised(f.setting, now, by_cpus)
        pair = _paired(runs, now, setting, f.setting.objective) if setting != now else None
        if pair is not None and open_to_noise(f.setting.expect, *pair):
            unsure.append(setting)
    return list(dict.fromkeys(unsure))


def _paired(
    runs: pd.DataFrame, now: Setting, setting: Setting, objective: str | None
) -> tuple[list[float], list[float]] | None:
    """The run's own and ``setting``'s per-run figures (``figures``) on ``objective``; None
    where the runs give none for either, or the objective is one this tftrace does not know."""
    try:
        a, b = figures(runs, now, objective), figures(runs, setting, objective)
    except TimingError:
        return None
    return (a, b) if a and b else None


def verification_runs(folder: Path) -> pd.DataFrame:
    """A verification sweep's timed runs, with those it added where noise left a verdict
    open (``MORE_DIR``)."""
    runs = load_sweep(folder).runs
    if (folder / MORE_DIR / "sweep.json").is_file():
        runs = pd.concat([runs, load_sweep(folder / MORE_DIR).runs], ignore_index=True)
    return runs


# Each objective's per-run figure in the runs table, lower is better: (column, factor to s).
FIGURES: dict[Objective | None, tuple[str, float]] = {
    None: ("time_s", 1.0),
    Objective.P50: ("p50_ms", 1e-3),
    Objective.P99: ("p99_ms", 1e-3),
}


def figures(runs: pd.DataFrame, setting: Setting, objective: str | None) -> list[float]:
    """The per-run figures of ``setting`` in a verification sweep's ``runs`` (one row per
    run: its setting's columns (``intra``, ``inter``, ``cpus``, variables), ``time_s`` and,
    where steps or requests were timed, ``per_s``, ``p50_ms``, ``p99_ms``), lower is better:
    the time per step, seconds per request (or step) for throughput, the latency percentile in
    seconds; runs without it are left out."""
    goal = None if objective is None else as_objective(objective)
    key = setting.key()
    mine = runs[[setting_of(r).key() == key for _, r in runs.iterrows()]]
    if goal is Objective.THROUGHPUT:
        rates = pd.to_numeric(mine.get("per_s", pd.Series(dtype=float)), errors="coerce")
        return [1 / float(r) for r in rates if r == r and r > 0]
    column, factor = FIGURES[goal]
    if column not in mine.columns:
        return []
    values = pd.to_numeric(mine[column], errors="coerce")
    return [float(v) * factor for v in values if v == v]


def mark(
    analysis: Analysis,
    runs: pd.DataFrame,
    now: Setting,
    out: Path,
    sized_by_cpus: Collection[str] = (),
) -> Analysis:
    """Each finding with a setting, marked by the timed ``runs`` of a verification sweep
    (``figures``) written to ``out``, on its setting's objective; a finding whose setting the
    sweep did not run, or whose objective the runs cannot give (no steps to take percentiles
    of), is left as it is. ``now`` and ``sized_by_cpus`` as ``advised`` takes them."""

    def checked(f: Finding) -> Finding:
        if f.setting is None:
            return f
        setting = advised(f.setting, now, sized_by_cpus)
        if setting == now:
            return _unchanged(f, now)
        goal = f.setting.objective
        pair = _paired(runs, now, setting, goal)
        if pair is None:
            return f
        a, b = pair
        name, base = _as_advised(setting, f.setting), _as_advised(now, f.setting)
        status, reason = judge(f.setting.expect, a, b, name.label(), base.label(), goal)
        speed, lo, hi, count = compare(a, b)
        check = Verification(
            status,
            (now.intra, now.inter),
            (setting.intra, setting.inter),
            speed,
            lo,
            hi,
            count,
            reason,
            str(out),
            current_env=_named(now, f.setting),
            advised_env=_named(setting, f.setting),
            current_cpus=now.cpus,
            advised_cpus=setting.cpus,
        )
        return dataclasses.replace(f, verification=check)

    return dataclasses.replace(analysis, findings=tuple(checked(f) for f in analysis.findings))


def last_verification(run: Run, analysis: Analysis) -> Analysis:
    """The findings as the run's latest ``tftrace analyze --verify`` found them (its sweep in
    ``RUN/verify``, ``verify-2``, ...), judged again from its timed runs without running
    anything; the analysis unchanged where no verification finished."""
    folders = [p for p in Path(run.path).glob(f"{VERIFY_DIR}*") if (p / "sweep.json").is_file()]
    if not folders or not any(f.setting for f in analysis.findings):
        return analysis
    latest = max(folders, key=_verify_number)
    try:
        now = current_setting(run, analysis.findings)
        runs = verification_runs(latest)
    except TftraceError:
        return analysis
    return mark(analysis, runs, now, latest, sized_by_cpus(run))


def _verify_number(folder: Path) -> int:
    """``verify`` is the first verification, ``verify-N`` the N-th (``_next_free``)."""
    suffix = folder.name.removeprefix(VERIFY_DIR).removeprefix("-")
    return int(suffix) if suffix.isdigit() else 1
