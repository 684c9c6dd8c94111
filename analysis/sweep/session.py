"""``tftrace.sweep()``: time a workload under several thread settings and say which to use.

The one call behind ``tftrace sweep``. It joins the two halves of a sweep: ``tracer/sweep.py``
runs the processes (one per setting and round, interleaved) and the rest of this package turns
their files into figures (``plan``: the checked arguments; ``timing``: what one run took;
``runs``: its row; ``result``: the table, the verdict and its warnings; ``report``: the JSON,
the words and the plot). Each run is timed as soon as it
ends, so that a marker that never runs fails on the first run, not after all of them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tftrace.analysis.model.run import load
from tftrace.analysis.sweep.outcome import SweepResult
from tftrace.analysis.sweep.plan import Baseline, Plan, Values, as_text, settings_of
from tftrace.analysis.sweep.plan import plan as make_plan
from tftrace.analysis.sweep.predicted import Narrowed, check_predictable, narrow
from tftrace.analysis.sweep.report import document, plot
from tftrace.analysis.sweep.result import build, recorded_view
from tftrace.analysis.sweep.runs import time_copies, time_run, usable_cpus
from tftrace.analysis.sweep.stats import setting_of
from tftrace.analysis.sweep.timing import Measure, Objective
from tftrace.errors import TraceError
from tftrace.tracer.options import (
    DEFAULT_SWEEP_REPEAT,
    Target,
    as_target,
)
from tftrace.tracer.rundir import write_json_atomic
from tftrace.tracer.safe_files import safe_dir
from tftrace.tracer.sweep import (
    SWEEP_FILE,
    Setting,
    SweepError,
    TimedRun,
    parse_instances,
    parse_values,
    run_recorded,
    run_timed,
)
from tftrace.tracer.sweep_setting import Axes, EnvSpec, parse_cpus, parse_env

PLOT_FILE = "speedup.png"


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep is: ``done`` of ``total`` runs have finished; ``text`` says which runs now.
    ``total`` grows once, when the runs that explain the verdict are planned. The first one,
    before any run, says the plan: how many settings, which knobs vary, how many runs."""

    text: str
    done: int
    total: int


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep. The runs that had finished are kept: ``result`` is their result,
    already written to the sweep directory, or None when no run had finished."""

    def __init__(self, result: SweepResult | None) -> None:
        super().__init__()
        self.result = result


def sweep(
    target: Target | str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    intra: Values = "auto",
    inter: Values = None,
    repeat: int = DEFAULT_SWEEP_REPEAT,
    measure: Measure | str = Measure.AUTO,
    marker: str | None = None,
    warmup_steps: int = 1,
    baseline: Baseline = None,
    record_each: bool = False,
    explain: bool = True,
    keep_script_settings: bool = False,
    output: str | os.PathLike[str] | None = None,
    name: str | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
    objective: Objective | str = Objective.THROUGHPUT,
    instances: str | Sequence[int] | None = None,
    env: EnvSpec = None,
    cpus: str | Sequence[int] | None = None,
    predict: int | None = None,
) -> SweepResult:
    """Time ``target`` under each setting, in fresh processes, and say which to use.

    Each setting (every combination of intra-op x inter-op pool sizes x environment variables
    x CPU counts) runs ``repeat`` times, each run a fresh process whose pools are sized through
    ``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS``, with the setting's variables in its
    environment and pinned to its CPUs, in rounds that interleave the settings (A B C A B C
    ...) so that a noisy minute hits all of them. Only a step timer runs inside them: what is
    timed is the workload's steady state (its steps after the warm-up ones), a marker's
    blocks, or with ``measure`` the script or the process. Then the baseline (and the
    recommended setting) is recorded once with every source and analysed: its main finding
    explains the verdict.

    A server (``tf.function`` calls, or ``Trace(..., step_num=)`` blocks, on two or more
    threads at once) is timed by its requests: requests/s after the warm-up, and their
    latency; ``objective`` says which figure decides.

    Args:
        target: the workload: a script's path, or a ``Target`` (a script or a ``-m`` module).
        args: the workload's arguments (after the ``Target``'s own).
        intra: intra-op pool sizes: ``"1,2,4"``, ``[1, 2, 4]`` or ``"auto"`` (1, 2, 4, ... up
            to the CPUs and one step beyond); 0 is TF's default; None leaves the pool to TF.
        inter: inter-op pool sizes, the same way; by default the pool is left to TF.
        repeat: timed runs per setting (3 or more to judge noise).
        measure: what to time: ``"auto"`` (the steady state between steps: ``tf.function``
            calls or ``Trace(..., step_num=)`` blocks; else the script), ``"steps"`` (fail
            without steps), ``"script"`` (the workload's code) or ``"process"`` (all of it).
        marker: time only the workload's ``tf.profiler.experimental.Trace(marker)`` blocks.
        warmup_steps: steps left out before the steady state starts (>= 1: the first traces).
        baseline: the setting speedups are relative to: ``(intra, inter)``, or ``"INTRA,INTER"``
            with ``-`` for a pool left to TF (the first setting with those sizes, whatever its
            variables and CPUs), or a ``Setting``; by default the first setting.
        record_each: record and analyse one run of every setting (pool concurrency, finding).
        explain: record the baseline and the recommended setting to explain the verdict.
        keep_script_settings: apply the workload's own ``tf.config.threading`` setter calls.
            By default the sweep owns the pool sizes: the calls are recorded and warned about,
            not applied, so they neither override the setting swept nor raise.
        output: the sweep directory to create (empty if it exists); by default a new one
            under ``./tftrace-sweeps/``, its name ending in ``name``.
        name: a label for the sweep, kept in the default directory's name.
        progress: called with a ``SweepProgress`` as each run starts and ends.
        objective: what the settings are compared by: ``"throughput"`` (steps, or a server's
            requests, per second), ``"p50"`` or ``"p99"`` (their latency percentile).
        instances: instance counts, ``"1,2,4"`` or ``[1, 2, 4]``: each runs that many copies
            of the workload at once, each pinned to its own contiguous share of the CPUs,
            beside one process on all of them (the baseline, unless ``baseline`` names
            another). More copies than usable CPUs are refused. Each copy's pools are
            sized to its share unless ``intra`` / ``inter`` give sizes (``intra="auto"``
            sizes them to the share too); their steps or requests per second are summed.
        env: environment variables to cross with the pool sizes, each with its values:
            ``{"OMP_NUM_THREADS": [1, 2], "TF_ENABLE_ONEDNN_OPTS": "0,1"}`` (values are
            strings; names in capitals, not the pools' own variables nor ones that choose
            which code runs, such as ``LD_*`` or ``PYTHON*``).
        cpus: CPU counts to cross with the rest, ``"1,2"`` or ``[1, 2]``: each runs the
            process pinned (before it starts, so TF sizes its default pools by them) to the
            first K of the CPUs this process may use. Not with ``instances``.
        predict: record the baseline once, predict every setting from it
            (``tftrace.predict``) and time only the baseline and the ``predict`` settings
            predicted fastest; the result's ``predicted`` says what that saved and what it
            may have missed. Pool sizes only (not with ``env``, ``cpus``, ``instances``).

    Returns:
        The ``SweepResult``: ``recommended`` (the ``Setting`` to use), ``recommendation`` (the
        verdict and why, in sentences), ``verdict.kind`` (``"faster"``, ``"no-difference"`` or
        ``"too-few-runs"``), ``table`` (per setting: median, spread, speedup, CPU use), ``runs``
        (per run), ``warnings``, and ``output``: the sweep directory, which holds
        ``sweep.json`` and ``speedup.png`` (``tftrace summary DIR`` shows it again).

    Raises:
        SweepError: a bad argument, a workload that cannot start, or a run that fails.
        TimingError: a run that cannot be timed as asked (no steps, a marker that never ran).
        SweepInterrupted: Ctrl-C; the finished runs' result is written and in ``.result``.

    Example::

        import tftrace

        result = tftrace.sweep("train.py", ["--epochs", "1"], intra=[1, 2, 4], inter=[1])
        print(result.recommended.label())  # e.g. "intra 2 · inter 1"
        for line in result.recommendation:
            print(line)
        print(result.table[["intra", "inter", "median_s", "speedup"]])

        # oneDNN on and off at each pool size: its effect flips with the thread count
        crossed = tftrace.sweep("train.py", intra=[1, 2], env={"TF_ENABLE_ONEDNN_OPTS": [0, 1]})
        print(crossed.table[["intra", "TF_ENABLE_ONEDNN_OPTS", "median_s", "speedup"]])
    """
    intra_text, inter_text = as_text(intra), as_text(inter)
    usable = tuple(sorted(os.sched_getaffinity(0)))
    axes = _axes(intra_text, inter_text, as_text(instances), env, as_text(cpus), len(usable))
    if predict is not None:
        check_predictable(predict, bool(axes.env), axes.cpus != [None], axes.instances is not None)
    plan = make_plan(
        as_target(target, args),
        settings_of(axes),
        asked={
            "intra": intra_text,
            "inter": inter_text,
            **({"env": {n: v for n, v in axes.env}} if axes.env else {}),
            **({"cpus": axes.cpus} if axes.cpus != [None] else {}),
        },
        objective=objective,
        instances=axes.instances,
        cpus=usable,
        varies=axes.words(),
        repeat=repeat,
        measure=measure,
        marker=marker,
        warmup_steps=warmup_steps,
        baseline=baseline,
        record_each=record_each,
        explain=explain,
        keep_script_settings=keep_script_settings,
        output=output,
        name=name,
    )
    return _Sweep(plan, progress or _quiet, predict).run()


def _axes(
    intra: str | None,
    inter: str | None,
    instances: str | None,
    env: EnvSpec,
    cpus: str | None,
    usable: int,
) -> Axes:
    """The knobs' values, each parsed and checked: pools (with instances, ``auto`` and a
    pool not given are each copy's share), variables, CPU counts."""
    counts = parse_instances(instances, usable)
    if counts is not None and cpus is not None:
        raise SweepError("--cpus and --instances both choose the CPUs: give one of them")
    intra_values: list[int | None]
    inter_values: list[int | None]
    if counts is not None:
        intra_values = [None] if intra == "auto" else parse_values(intra, usable, "intra")
        inter_values = [None] if inter == "auto" else parse_values(inter, usable, "inter")
    else:
        intra_values = parse_values(intra, usable, "intra")
        inter_values = parse_values(inter, usable, "inter")
    return Axes(
        intra_values,
        inter_values,
        parse_env(env),
        parse_cpus(cpus, usable),
        counts,
        usable,
    )


def sweep_settings(
    target: Target,
    settings: Sequence[Setting],
    *,
    baseline: Setting,
    repeat: int,
    warmup_steps: int,
    output: Path,
    progress: Callable[[SweepProgress], None] | None = None,
) -> SweepResult:
    """Time ``target`` under each of ``settings`` (not a grid) against ``baseline``, as
    ``sweep`` does, without recording runs to explain the verdict: ``tftrace.verify``'s runs."""
    plan = make_plan(
        target,
        list(settings),
        asked={"settings": [s.to_json() for s in settings]},
        repeat=repeat,
        measure=Measure.AUTO,
        marker=None,
        warmup_steps=warmup_steps,
        baseline=baseline,
        record_each=False,
        explain=False,
        keep_script_settings=False,
        output=output,
        name=None,
        varies="the run's own and each advised",
    )
    return _Sweep(plan, progress or _quiet).run()


def _quiet(_: SweepProgress) -> None:
    pass


class _Sweep:
    """One sweep under way: its timed runs so far, and the progress told of them."""

    def __init__(
        self, plan: Plan, progress: Callable[[SweepProgress], None], predict: int | None = None
    ) -> None:
        self.plan = plan
        self.options = plan.options
        self.progress = progress
        self.predict = predict
        self.narrowed: Narrowed | None = None
        self.baseline_run: Path | None = None  # recorded to predict from
        self.runs: list[TimedRun] = []
        self.rows: list[dict[str, Any]] = []  # each run's timing, in the order of ``runs``
        self.planned = len(self.options.settings) * self.options.repeat
        self.total = self.planned + (1 if predict is not None else 0)
        self.done = 0
        self.text = ""

    def run(self) -> SweepResult:
        """Time, judge, explain, write; on Ctrl-C, write what finished."""
        result: SweepResult | None = None
        self.progress(SweepProgress(self.plan.summary, 0, self.total))
        try:
            if self.predict is not None:
                self._narrow(self.predict)
            self._time_all()
            result = self._result()
            self._explain(result, self._to_record(result))
        except KeyboardInterrupt:
            if result is None:
                if not self.runs:
                    raise SweepInterrupted(None) from None
                result = self._result()
                result.warnings.append(
                    f"interrupted after {len(self.rows)} of {self.planned} timed runs"
                )
            else:
                result.warnings.append("interrupted while recording runs to explain the result")
            raise SweepInterrupted(self._write(result)) from None
        return self._write(result)

    def _narrow(self, k: int) -> None:
        """Record the baseline, predict the grid from it, and keep the settings to time."""
        base = self.plan.baseline
        ((_, path),) = run_recorded(self.options, [base], self._starts)
        self._ended()
        self.baseline_run = path
        self.narrowed = narrow(load(path), self.options.settings, base, k, self.plan.objective)
        self.options = replace(self.options, settings=self.narrowed.settings)
        self.plan = replace(self.plan, options=self.options)
        self.planned = len(self.options.settings) * self.options.repeat
        self.total = 1 + self.planned

    def _starts(self, text: str) -> None:
        self.text = text
        self.progress(SweepProgress(self.text, self.done, self.total))

    def _ended(self) -> None:
        self.done += 1
        self.progress(SweepProgress(self.text, self.done, self.total))

    def _time_all(self) -> None:
        how, warmup, goal = self.plan.how, self.plan.warmup_steps, self.plan.objective
        for group in run_timed(self.options, self._starts):
            if group[0].copy is None:
                self.rows.append(time_run(group[0], how, self.options.marker, warmup, goal))
            else:
                self.rows.append(time_copies(group, how, self.options.marker, warmup, goal))
            self.runs.extend(group)
            self._ended()

    def _result(self) -> SweepResult:
        base = self.plan.baseline
        if base not in {r.setting for r in self.runs}:  # interrupted before the baseline ran
            base = self.runs[0].setting
        if any(r.cpus for r in self.runs):  # a pinned run's manifest has fewer
            cpus = len(self.options.cpus)
        else:
            cpus = usable_cpus(self.runs[0].manifest)
        target = self.options.target.argv()
        result = build(self.rows, cpus, base, target, self.plan.objective)
        if self.narrowed is not None:
            result = replace(result, predicted=self.narrowed)
        if self.baseline_run is not None:
            result.recorded[self.plan.baseline.key()] = recorded_view(self.baseline_run)
        return result

    def _to_record(self, result: SweepResult) -> list[Setting]:
        """Every setting with ``record_each``, else the baseline and the recommended one; not
        one recorded already (``--predict``'s baseline)."""
        if self.options.record_each:
            settings = list(self.options.settings)
        elif not self.plan.explain:
            return []
        else:
            t, v = result.table, result.verdict
            rows = [int(t.index[t["is_baseline"]][0])]
            if v.kind == "faster":
                rows.append(v.recommended)
            settings = [setting_of(t.loc[i]) for i in dict.fromkeys(rows)]
        return [s for s in settings if s.key() not in result.recorded]

    def _explain(self, result: SweepResult, settings: list[Setting]) -> None:
        self.total += len(settings)
        for setting in settings:
            # A recorded run that fails costs its explanation, not the timings already taken.
            try:
                ((_, path),) = run_recorded(self.options, [setting], self._starts)
                result.recorded[setting.key()] = recorded_view(path)
            except (SweepError, TraceError) as e:
                result.warnings.append(f"the recorded run of {setting.label()} failed: {e}")
            self._ended()

    def _write(self, result: SweepResult) -> SweepResult:
        """``sweep.json`` and ``speedup.png`` in the sweep directory; the result that knows
        where they are."""
        out = self.options.output
        created = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        result = replace(result, output=out, options=dict(self.plan.asked), created=created)
        safe_dir(out)
        write_json_atomic(out / SWEEP_FILE, document(result))
        plot(result, out / PLOT_FILE)
        return result
