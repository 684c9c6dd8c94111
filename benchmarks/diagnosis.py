"""Are tftrace's findings right? Each advised thread setting checked by experiment.

Run it from the repository root with the project's virtualenv:

    .venv/bin/python benchmarks/diagnosis.py            # 18 workloads: ~1.5 h on 2 cores
    .venv/bin/python benchmarks/diagnosis.py --quick    # 2 workloads, repeat 3: a few minutes
    .venv/bin/python benchmarks/diagnosis.py --only branches,small-ops --repeat 3
    .venv/bin/python benchmarks/diagnosis.py --markdown docs/diagnosis.md --output runs/

For every workload of a corpus of real TensorFlow workloads (``tests/workloads/``), each
with the pool sizes it is recorded with (intra-op / inter-op; CPUS = the usable CPUs):
training and inference loops, and servers (requests from several Python threads at once:
``serve_*.py``), which are timed by their requests throughout. Two are not alone on the
cores: one calls NumPy, whose BLAS pool (``OPENBLAS_NUM_THREADS=2``) shares them with TF's
pools (that variable is swept too, at 1 and 2), and one runs while another process spins on
one of the CPUs throughout its recording, verification and sweep (no setting can win that
core back: advice there counts against precision when it is not confirmed).

1. record it (``tftrace.record``, no py-spy) and analyse it (``tftrace.analyze``);
2. verify the findings that advise a thread setting (``tftrace.verify``: the advised setting
   and the recorded one, fresh interleaved processes, ``--verify-repeat`` runs each,
   default 7, judged as ``tftrace analyze --verify`` judges them);
3. sweep a grid independently of the findings (``tftrace.sweep``): intra-op in
   {1, CPUS, 2*CPUS} x inter-op in {1, CPUS}, the recorded sizes added to the axes (and, for
   a server, its client threads, the most requests it can have in flight, to the inter-op
   axis: the size a user would try; a workload's variables crossed with them), the recorded
   setting as the baseline, ``--repeat``
   runs each. A server is swept by its throughput (``objective="throughput"``: requests per
   second, compared as seconds per request); a loop by its time per step.

Two figures, with their targets:

    precision = confirmed / given           >= 0.9
        over every finding that advises a setting; "inconclusive" (and a verification
        that failed or did not run) counts as given and not confirmed.
    recall    = hits / workloads with a gain  >= 0.8
        a workload has a gain when its sweep found a setting at least 10 % faster than the
        recorded one beyond noise (``stats.faster`` and a median ratio >= 1.10). It is a hit
        when some finding advised a setting (None = the recorded size) that the sweep found
        that much faster; an advised setting outside the grid, or one whose finding claims a
        measure the sweep did not time (a server's p50 or p99 latency: the sweep is by
        throughput), counts when its verification confirmed it at >= 1.10x (by the
        finding's own measure). Without any workload with a gain, recall is "n/a".

Everything is kept under ``--output`` (default: a new temporary directory): per workload
NAME its run directory (``NAME/record``), the verification's runs (``NAME/verify``) and its
sweep (``NAME/sweep``); and ``results.json`` for all of them. ``--markdown PATH`` writes the
table and the figures as a Markdown document (for ``docs/diagnosis.md``), with the CPU model,
core count, TensorFlow version, date and repeats. The exit status is 0 whether or not a target
is met (it is a benchmark); with ``--check`` it is 1 when a target is missed or a workload
fails.

It needs the machine to itself: other processes make every setting look alike (and a server's
recording crowded). Each workload's ``other load`` is the share of the machine's cores that
anything else used while it ran (``/proc/stat``'s busy time, hypervisor steal included, less
the benchmark's own CPU time and its children's); the table's notes name the workloads where
it was 5 % or more.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import tftrace
from tftrace.analysis.sweep.stats import faster  # beyond noise: tftrace's own test
from tftrace.printable import printable
from tftrace.tracer.options import DEFAULT_VERIFY_REPEAT
from tftrace.tracer.sweep_setting import Setting as SweepSetting

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "tests" / "workloads"
# Timed per step (a Trace(step_num=) block each), so that TensorFlow's import and the first
# product are left out of the timing: eager scripts without steps are timed whole.
MATMUL = str(ROOT / "examples" / "matmul_scaling.py")
BIG = ["--size", "1500", "--count", "10"]
# Steps of the loops whose ops the executor never learns as cheap (one tf.py_function, big
# products): 20 steps of a 6 ms py_function timed 120 ms a run, and its settings' medians
# over 9 runs fell 0.80-1.14x apart on a workload no setting changes. Long enough to time a
# second or so; the loops of small ops keep theirs, whose runs would cross the ~90 calls
# after which TF's executor runs cheap ops inline (docs/recording.md).
LONG_STEPS = 100
RECORD_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}  # the pool sizes are added per workload

GAIN = 1.10  # a setting "gains" when the recorded one's median over its median is >= this
PRECISION_TARGET = 0.9
RECALL_TARGET = 0.8
DEFAULT_REPEAT = 5
QUICK_REPEAT = 3
QUICK = ("small-ops", "big-matmul-intra1")

Pair = tuple[int | None, int | None]  # (intra, inter); None = keep the recorded size
Setting = tuple[int, int]
# Environment variables a workload is recorded with and swept over, as sorted (name, value)
# pairs: a library's thread variable (OPENBLAS_NUM_THREADS) is a knob like a pool size.
Knobs = tuple[tuple[str, str], ...]
# A server's sweep compares its settings by this (``tftrace.sweep(objective=)``).
SERVER_OBJECTIVE = "throughput"
# Measures that are one figure: a loop's time per step is its throughput's inverse, and a
# server's runs are timed by their requests (its time per step is seconds per request).
PER_UNIT = (None, "throughput")
OTHER_LOAD_NOTE = 0.05  # other processes' share of the cores worth a note beside the table


# ---------------------------------------------------------------------------------------------
# The corpus


@dataclass(frozen=True)
class Workload:
    """One corpus entry: a script with its arguments, recorded at ``intra`` / ``inter``;
    ``clients``: a server's client threads (the most requests it has in flight), None for a
    loop; ``env``: variables it is recorded with, each swept over ``env_axis``'s values;
    ``beside``: another process spins on one of its CPUs throughout (record, verify, sweep)."""

    name: str
    script: Path
    args: tuple[str, ...]
    intra: int
    inter: int
    about: str
    clients: int | None = None
    env: Knobs = ()
    env_axis: tuple[tuple[str, tuple[str, ...]], ...] = ()
    beside: bool = False

    @property
    def recorded(self) -> Setting:
        return (self.intra, self.inter)

    @property
    def objective(self) -> str | None:
        """What its sweep compares settings by: a server's throughput; None for a loop
        (``tftrace.sweep``'s default, the time per step)."""
        return SERVER_OBJECTIVE if self.clients else None


def corpus(cpus: int) -> list[Workload]:
    """The workloads, with the pool sizes they are recorded at on ``cpus`` usable CPUs."""

    def w(name: str, script: str, args: Sequence[str], intra: int, inter: int, about: str):
        return Workload(name, WORKLOADS / script, tuple(args), intra, inter, about)

    def server(name: str, script: str, intra: int, inter: int, about: str, clients: int = 4):
        args = ("--clients", str(clients))
        return Workload(name, WORKLOADS / script, args, intra, inter, about, clients)

    c = cpus
    return [
        w("keras-mobilenet", "keras_fit_mobilenet.py", ["--batches", "16"], c, c,
          "Keras fit of MobileNetV2 (weights=None)"),
        w("keras-custom", "keras_fit_custom.py", ["--batches", "40"], c, c,
          "Keras fit of a Conv/Dense model fed by tf.data"),
        w("data-sequential", "data_sequential.py", [], c, c,
          "tf.data map without parallel calls"),
        w("data-map-parallel", "data_map_parallel.py", ["autotune"], c, c,
          "tf.data map, num_parallel_calls=AUTOTUNE"),
        w("py-function", "py_function_loop.py", ["--steps", str(LONG_STEPS)], c, c,
          "tf.function whose work is a tf.py_function"),
        w("branches-intra1", "branches.py", ["--steps", str(LONG_STEPS // 4)], 1, 1,
          "two independent matmul chains, one thread per pool"),
        w("branches", "branches.py", ["--steps", str(LONG_STEPS // 4)], c, c,
          "two independent matmul chains"),
        w("big-matmul-intra1", MATMUL, BIG, 1, c,
          "eager 1500x1500 products, one per step, run inline (intra 1)"),
        w("big-matmul", MATMUL, BIG, c, c,
          "eager 1500x1500 products, one per step"),
        w("small-ops", "small_ops.py", [], c, c,
          "tf.function of many small products"),
        w("big-matmul-oversubscribed", MATMUL, BIG, 2 * c, c,
          "eager 1500x1500 products, one per step, intra 2*CPUS"),
        w("small-elementwise", "eager_small_elementwise.py", [], c, c,
          "tight eager loop of small element-wise ops"),
        server("serve-executor", "serve_executor.py", c, c,
               "tf.function (small conv net) served by a 4-thread ThreadPoolExecutor"),
        server("serve-executor-inter1", "serve_executor.py", c, 1,
               "the same server with inter-op 1 (requests queue for it)"),
        server("serve-keras", "serve_keras_threads.py", c, c,
               "Keras MobileNetV2 predict_on_batch from 4 Python threads"),
        server("serve-savedmodel", "serve_savedmodel.py", c, c,
               "a loaded SavedModel's serving_default signature from 4 Python threads"),
        Workload("blas-beside-pools", WORKLOADS / "blas_step.py", (), c, c,
                 "NumPy products (OpenBLAS, 2 threads) beside TF matmuls in each step",
                 env=(("OPENBLAS_NUM_THREADS", "2"),),
                 env_axis=(("OPENBLAS_NUM_THREADS", ("1", "2")),)),
        Workload("big-matmul-beside-burner", Path(MATMUL), tuple(BIG), c, c,
                 "eager 1500x1500 products while another process spins on one CPU",
                 beside=True),
    ]  # fmt: skip


def sweep_axes(
    cpus: int, recorded: Setting, clients: int | None = None
) -> tuple[list[int], list[int]]:
    """The sweep's intra-op and inter-op sizes: {1, CPUS, 2*CPUS} x {1, CPUS}, with the
    recorded sizes added so that the recorded setting is in the grid (it is the baseline),
    and a server's ``clients`` added to the inter-op sizes (one thread per request)."""
    intra = sorted({1, cpus, 2 * cpus, recorded[0]})
    inter = sorted({1, cpus, recorded[1], *([clients] if clients else [])})
    return intra, inter


# ---------------------------------------------------------------------------------------------
# What one workload gave, and the scoring (pure functions of these)


@dataclass(frozen=True)
class Advice:
    """A finding that advises a setting: its ``advised`` pair as the finding gives it (None =
    keep the recorded size), the verification's ``status`` ("confirmed", "not confirmed",
    "inconclusive", or "not verified" when no verification came back) and its ``speedup``,
    by the finding's ``objective`` (``AdvisedSetting.objective``: None, the time per step; a
    server's "throughput", "p50" or "p99": for a latency, how many times lower it ran)."""

    id: str
    advised: Pair
    status: str
    speedup: float | None = None
    reason: str = ""
    objective: str | None = None
    env: Knobs = ()  # the variables the finding advises, beside the pools


@dataclass
class Outcome:
    """One workload's results: its advice and its sweep table (None when the sweep failed),
    swept by ``objective`` (None: the time per step; a server's "throughput"); ``shape`` is
    what the analysis found the recorded run to be ("loop", "server"...; None: unknown)."""

    name: str
    recorded: Setting
    advice: list[Advice] = field(default_factory=list)
    table: pd.DataFrame | None = None
    errors: list[str] = field(default_factory=list)
    objective: str | None = None
    shape: str | None = None
    other_load: float | None = None  # the share of the cores others used meanwhile
    env: Knobs = ()  # the swept variables' recorded values


def resolve(advised: Pair, recorded: Setting) -> Setting:
    """An advised pair with the recorded size where it keeps a pool."""
    intra, inter = advised
    return (recorded[0] if intra is None else intra, recorded[1] if inter is None else inter)


def resolve_env(advice: Advice, outcome: Outcome) -> Knobs:
    """The variables an advised setting runs with: the recorded ones, the advised changed."""
    return tuple(sorted({**dict(outcome.env), **dict(advice.env)}.items()))


def _key(row: pd.Series) -> Pair:
    return tuple(None if pd.isna(row[k]) else int(row[k]) for k in ("intra", "inter"))  # type: ignore[return-value]


def _row_knobs(row: pd.Series, env: Knobs) -> Knobs:
    """The row's values of ``env``'s variables (the ones the table has a column for)."""
    return tuple((name, str(row[name])) for name, _ in env if name in row.index)


def lookup(table: pd.DataFrame, setting: Setting, env: Knobs = ()) -> pd.Series | None:
    """The sweep table's row for ``setting`` with ``env``'s values of the variables it
    swept, or None when it was not swept."""
    swept = tuple((name, value) for name, value in env if name in table.columns)
    for _, row in table.iterrows():
        if _key(row) == tuple(setting) and _row_knobs(row, swept) == swept:
            return row
    return None


def env_columns(table: pd.DataFrame) -> list[str]:
    """The variables a sweep table crossed with the pools (its upper-case columns)."""
    return [c for c in table.columns if isinstance(c, str) and c.isupper()]


def row_label(row: pd.Series) -> str:
    """A sweep row's setting: ``intra/inter`` and each swept variable's value."""
    knobs = [f"{name}={row[name]}" for name in env_columns(row.to_frame().T)]
    return " ".join([label(_key(row)), *knobs])


def gain_of(row: pd.Series, base: pd.Series) -> float:
    """How much faster ``row`` ran than ``base``: the ratio of their medians."""
    return float(base["median_s"] / row["median_s"])


def gains(row: pd.Series, base: pd.Series) -> bool:
    """``row`` is at least ``GAIN`` faster than ``base``, beyond noise."""
    return faster(row, base) and gain_of(row, base) >= GAIN


def best_row(
    table: pd.DataFrame, recorded: Setting, env: Knobs = ()
) -> tuple[pd.Series, float, bool]:
    """The sweep's best row against the recorded setting (its pools and ``env``): (row,
    speedup, is it a gain). Among the settings that gain, the one with the largest speedup;
    without any, the setting with the lowest median."""
    base = lookup(table, recorded, env)
    if base is None:
        raise ValueError(f"the recorded setting {recorded} {env} is not in the sweep table")
    rows = [row for _, row in table.iterrows()]
    winners = [row for row in rows if gains(row, base)]
    if winners:
        pick = max(winners, key=lambda r: gain_of(r, base))
    else:
        pick = min(rows, key=lambda r: float(r["median_s"]))
    return pick, gain_of(pick, base), bool(winners)


def best(table: pd.DataFrame, recorded: Setting, env: Knobs = ()) -> tuple[Setting, float, bool]:
    """``best_row`` with the row's pool sizes."""
    pick, speedup, gained = best_row(table, recorded, env)
    intra, inter = _key(pick)
    return (intra, inter), speedup, gained  # type: ignore[return-value]


def has_gain(outcome: Outcome) -> bool:
    """The sweep found a setting ``GAIN`` faster than the recorded one, beyond noise."""
    return outcome.table is not None and best(outcome.table, outcome.recorded, outcome.env)[2]


def same_measure(a: str | None, b: str | None) -> bool:
    """Whether two objectives are one figure (a time per step is a throughput's inverse)."""
    return a == b or (a in PER_UNIT and b in PER_UNIT)


def advice_hit(advice: Advice, outcome: Outcome) -> bool:
    """The advised setting is one the sweep found ``GAIN`` faster than the recorded one; an
    advised setting the sweep did not run, or did not time by the finding's measure (a
    latency percentile, where the sweep is by throughput), counts when verified so
    (confirmed, >= ``GAIN``)."""
    setting = resolve(advice.advised, outcome.recorded)
    table = outcome.table
    if not same_measure(advice.objective, outcome.objective):
        table = None
    row = lookup(table, setting, resolve_env(advice, outcome)) if table is not None else None
    base = lookup(table, outcome.recorded, outcome.env) if table is not None else None
    if row is not None and base is not None:
        return gains(row, base)
    return advice.status == "confirmed" and advice.speedup is not None and advice.speedup >= GAIN


def hit(outcome: Outcome) -> bool:
    """Some finding of the workload advised a setting that gains."""
    return any(advice_hit(a, outcome) for a in outcome.advice)


def precision(outcomes: Iterable[Outcome]) -> tuple[int, int]:
    """(confirmed, given) over every finding that advises a setting."""
    given = [a for o in outcomes for a in o.advice]
    return sum(a.status == "confirmed" for a in given), len(given)


def recall(outcomes: Iterable[Outcome]) -> tuple[int, int]:
    """(hits, workloads with a gain)."""
    with_gain = [o for o in outcomes if has_gain(o)]
    return sum(hit(o) for o in with_gain), len(with_gain)


def ratio(part: int, whole: int) -> float | None:
    """part / whole, None when whole is 0 (the figure is undefined)."""
    return part / whole if whole else None


def judgement(name: str, part: int, whole: int, target: float) -> tuple[str, bool | None]:
    """A figure's line and whether it meets its target (None: undefined, not judged)."""
    value = ratio(part, whole)
    if value is None:
        return f"{name}: n/a (0 of 0)  target >= {target:.2f}: not judged", None
    ok = value >= target - 1e-12
    verdict = "PASS" if ok else "FAIL"
    return f"{name}: {value:.2f} ({part} of {whole})  target >= {target:.2f}: {verdict}", ok


# ---------------------------------------------------------------------------------------------
# The table, in the terminal and in Markdown


def label(setting: Pair) -> str:
    """``intra/inter``; "-" for a pool kept at its recorded size."""
    return "/".join("-" if v is None else str(v) for v in setting)


def knobs_label(setting: Pair, env: Knobs) -> str:
    """``intra/inter`` and the variables' values: ``2/2 OPENBLAS_NUM_THREADS=1``."""
    return " ".join([label(setting), *(f"{name}={value}" for name, value in env)])


def advised_label(advice: Advice, outcome: Outcome) -> str:
    """The setting an advice runs: its pools resolved, and the variables it changes."""
    return knobs_label(resolve(advice.advised, outcome.recorded), advice.env)


def _by(objective: str | None) -> str:
    """`` (p99)``: the measure a figure is by, where it is not the time per step."""
    return "" if objective is None else f" ({objective})"


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "no")


HEADER = ("workload", "recorded", "finding -> advised", "status", "speedup", "sweep best", "gain?",
          "hit?")  # fmt: skip


def rows(outcomes: Sequence[Outcome]) -> list[tuple[str, ...]]:
    """The per-workload table: one line per finding with a setting (at least one per workload);
    the workload's own columns on its first line only."""
    out: list[tuple[str, ...]] = []
    for o in outcomes:
        if o.table is not None:
            pick, speedup, gain = best_row(o.table, o.recorded, o.env)
            sweep = f"{row_label(pick)} {speedup:.2f}x{_by(o.objective)}"
            gained: bool | None = gain
            hits: bool | None = hit(o) if gain else None
        else:
            sweep, gained, hits = "failed", None, None
        findings = [
            (
                f"{a.id} -> {advised_label(a, o)}{_by(a.objective)}",
                a.status,
                "-" if a.speedup is None else f"{a.speedup:.2f}x",
            )
            for a in o.advice
        ] or [("(none)", "", "")]
        for i, (what, status, speed) in enumerate(findings):
            head = (o.name, knobs_label(o.recorded, o.env)) if i == 0 else ("", "")
            tail = (sweep, _yes(gained), _yes(hits)) if i == 0 else ("", "", "")
            out.append((*head, what, status, speed, *tail))
    return out


def text_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, body)])


def markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    cell = lambda c: c.replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in body]
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def tf_version() -> str:
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly", "tensorflow-intel"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def source_version() -> str:
    """The tftrace commit the benchmark runs (the rules change: a result names its rules), with
    "+ local changes" where the working tree differs from it; "unknown" outside a checkout."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        changed = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "analysis",
                "tracer",
                "src",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} + local changes" if changed else head


def markdown(
    outcomes: Sequence[Outcome],
    cpus: int,
    repeats: tuple[int, int],
    figures: Sequence[str],
    version: str | None = None,
) -> str:
    """The document for ``docs/diagnosis.md`` (no machine path or hostname in it)."""
    return "\n".join(
        [
            "# Diagnosis benchmark: are tftrace's findings right?",
            "",
            "Written by `python benchmarks/diagnosis.py --markdown docs/diagnosis.md`; how it",
            "measures is in that script's docstring. Settings are `intra/inter` pool sizes;",
            "`-` keeps the recorded size. A speedup is the recorded setting's median time",
            "over the advised (or best) setting's: above 1, the advice is faster. In",
            "parentheses, the measure a figure is by where it is not the time per step: a",
            "server's throughput (requests/s, as seconds per request) or latency percentile",
            "(p99: how many times lower it ran).",
            "",
            f"- CPU: {cpu_model()}",
            f"- usable cores: {cpus}",
            f"- TensorFlow: {tf_version()}",
            *([f"- tftrace: {version}"] if version else []),
            f"- date: {datetime.date.today().isoformat()}",
            f"- repeat: {repeats[0]} timed runs per setting in a sweep, "
            f"{repeats[1]} in a verification",
            "",
            markdown_table(HEADER, rows(outcomes)),
            "",
            *[f"- {line}" for line in figures],
            "",
        ]
    )


# ---------------------------------------------------------------------------------------------
# Running the corpus


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _machine_busy() -> tuple[float, int] | None:
    """(CPU-seconds the whole machine has been busy: every process, interrupts and the time
    the hypervisor stole, its CPU count), from ``/proc/stat``; None where it cannot be read."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    ticks = [int(v) for v in lines[0].split()[1:9]]
    if len(ticks) < 8:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    count = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK"), count


def _own_cpu_s() -> float:
    """This process's CPU time and its finished children's (the recorded and swept runs)."""
    me, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


class OtherLoad:
    """The share of the machine's cores that others used between ``start`` and ``share``."""

    def __init__(self) -> None:
        self.busy, self.own, self.t0 = _machine_busy(), _own_cpu_s(), time.monotonic()

    def share(self) -> float | None:
        end = _machine_busy()
        seconds = time.monotonic() - self.t0
        if self.busy is None or end is None or seconds <= 0 or not end[1]:
            return None
        other = (end[0] - self.busy[0]) - (_own_cpu_s() - self.own)
        return min(1.0, max(0.0, other / (seconds * end[1])))


def load_notes(outcomes: Sequence[Outcome]) -> list[str]:
    """One line naming the workloads that ran beside others' load (``OTHER_LOAD_NOTE`` or
    more of the cores), or none."""
    busy = [o for o in outcomes if o.other_load is not None and o.other_load >= OTHER_LOAD_NOTE]
    if not busy:
        return []
    named = ", ".join(f"{o.name} {o.other_load:.0%}" for o in busy)
    return [f"other processes used the cores while these ran (share of all cores): {named}"]


def _advice_of(findings: Sequence[Any]) -> list[Advice]:
    out = []
    for f in findings:
        if f.setting is None:
            continue
        v = f.verification
        out.append(
            Advice(
                f.id,
                (f.setting.intra, f.setting.inter),
                v.status.value if v is not None else "not verified",
                v.speedup if v is not None else None,
                v.reason if v is not None else "no verification came back",
                f.setting.objective,
                tuple(sorted(dict(f.setting.env).items())),
            )
        )
    return out


def run_one(w: Workload, cpus: int, repeats: tuple[int, int], out: Path) -> Outcome:
    """Record, analyse, verify and sweep one workload (``repeats``: runs per setting in the
    sweep and in the verification); failures are kept as errors."""
    outcome = Outcome(w.name, w.recorded, objective=w.objective, env=w.env)
    others = OtherLoad()
    burner = _start_burner(out) if w.beside else None
    try:
        _record_and_verify(w, repeats[1], out, outcome)
        _sweep(w, cpus, repeats[0], out, outcome)
    finally:
        if burner is not None:  # waited for: its CPU counts as this process's children's
            burner.kill()
            burner.wait()
    outcome.other_load = others.share()
    if outcome.other_load is not None:
        _say(f"  other processes used {outcome.other_load:.0%} of the cores meanwhile")
    return outcome


def _start_burner(out: Path) -> subprocess.Popen[bytes]:
    """Another process spinning on the last usable CPU (``tests/workloads/burner.py``)."""
    cpu = max(os.sched_getaffinity(0))
    out.mkdir(parents=True, exist_ok=True)
    _say(f"  another process spins on CPU {cpu} throughout")
    burner = subprocess.Popen(
        [sys.executable, str(WORKLOADS / "burner.py"), "--cpu", str(cpu), "--log",
         str(out / "burner.log")]
    )  # fmt: skip
    time.sleep(0.5)  # spinning before the recording starts
    return burner


def _record_and_verify(w: Workload, verify_repeat: int, out: Path, outcome: Outcome) -> None:
    env = {
        **RECORD_ENV,
        "TF_NUM_INTRAOP_THREADS": str(w.intra),
        "TF_NUM_INTEROP_THREADS": str(w.inter),
        **dict(w.env),
    }
    try:
        _say(f"  record {' '.join([w.script.name, *w.args])} at {knobs_label(w.recorded, w.env)}")
        rec = tftrace.record(
            w.script, list(w.args), output=out / "record", pyspy=False, env=env, echo=False
        )
        if rec.exit_code != 0:
            raise RuntimeError(f"the workload exited with {rec.exit_code}")
        run = tftrace.load(rec.run.path)
        analysis = tftrace.analyze(run)
        outcome.shape = analysis.shape
        requests = analysis.requests
        if requests is not None:
            _say(
                f"  {analysis.shape}: {len(requests.table)} requests on {requests.threads} "
                f"threads, {requests.throughput:.0f}/s, {requests.mean_in_flight():.1f} in flight"
            )
        if w.clients and analysis.shape != "server":
            outcome.errors.append(f"recorded as a {analysis.shape}, not a server")
        advised = [f for f in analysis.findings if f.setting is not None]
        _say(f"  {len(analysis.findings)} finding(s), {len(advised)} with a setting")
        if advised:
            _say(f"  verify {', '.join(f.id for f in advised)} (repeat {verify_repeat})")
            analysis = tftrace.verify(run, analysis, repeat=verify_repeat, output=out / "verify")
        outcome.advice = _advice_of(analysis.findings)
        for f in analysis.findings:
            v = f.verification
            if v is not None and tuple(v.current) != w.recorded:
                outcome.errors.append(
                    f"the run's pool sizes were {label(v.current)}, not {label(w.recorded)}"
                )
                break
    except Exception as e:  # a 40-minute benchmark goes on to the next workload
        traceback.print_exc(file=sys.stderr)
        outcome.errors.append(f"record/verify: {type(e).__name__}: {e}")


def _sweep(w: Workload, cpus: int, repeat: int, out: Path, outcome: Outcome) -> None:
    try:
        intra, inter = sweep_axes(cpus, w.recorded, w.clients)
        axis = {name: list(values) for name, values in w.env_axis}
        by = f", by {w.objective}" if w.objective else ""
        knobs = "".join(f" x {name} {values}" for name, values in axis.items())
        _say(f"  sweep intra {intra} x inter {inter}{knobs} (repeat {repeat}{by})")
        # with variables swept, the recorded setting is the one with their recorded values
        baseline: Setting | SweepSetting = w.recorded
        if axis:
            baseline = SweepSetting(w.intra, w.inter, env_vars=w.env)
        result = tftrace.sweep(
            w.script,
            list(w.args),
            intra=intra,
            inter=inter,
            env=axis or None,
            repeat=repeat,
            baseline=baseline,
            explain=False,
            output=out / "sweep",
            # a loop by its time per step: the inverse of tftrace.sweep's default, throughput
            objective=w.objective or "throughput",
        )
        outcome.table = result.table
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        outcome.errors.append(f"sweep: {type(e).__name__}: {e}")


def to_json(o: Outcome) -> dict[str, Any]:
    table = None
    if o.table is not None:
        cols = ["intra", "inter", *env_columns(o.table), "runs", "median_s", "min_s", "max_s",
                "speedup"]  # fmt: skip
        table = [
            {k: (None if pd.isna(r[k]) else r[k].item() if hasattr(r[k], "item") else r[k])
             for k in cols}
            for _, r in o.table[cols].iterrows()
        ]  # fmt: skip
    return {
        "name": o.name,
        "recorded": list(o.recorded),
        "advice": [
            {
                "id": a.id,
                "advised": list(a.advised),
                "resolved": list(resolve(a.advised, o.recorded)),
                "env": dict(a.env),
                "status": a.status,
                "speedup": a.speedup,
                "reason": a.reason,
                "objective": a.objective,
                "hit": advice_hit(a, o),
            }
            for a in o.advice
        ],
        "env": dict(o.env),
        "objective": o.objective,
        "shape": o.shape,
        "other_load": o.other_load,
        "sweep": table,
        "gain": has_gain(o),
        "hit": hit(o),
        "errors": o.errors,
    }


def from_json(data: dict[str, Any]) -> Outcome:
    """An ``Outcome`` back from its ``to_json`` (``--combine``)."""
    recorded: Setting = (int(data["recorded"][0]), int(data["recorded"][1]))
    advice = [
        Advice(
            a["id"],
            tuple(a["advised"]),
            a["status"],
            a["speedup"],
            a["reason"],
            a.get("objective"),
            tuple(sorted(a.get("env", {}).items())),
        )
        for a in data["advice"]
    ]
    table = pd.DataFrame(data["sweep"]) if data["sweep"] is not None else None
    errors = list(data["errors"])
    return Outcome(
        data["name"],
        recorded,
        advice,
        table,
        errors,
        data.get("objective"),
        data.get("shape"),
        data.get("other_load"),
        tuple(sorted(data.get("env", {}).items())),
    )


def read_results(path: Path) -> dict[str, Any]:
    """A saved run's ``results.json``; SystemExit with one line where the file is not one
    (unreadable, not JSON, no list of workloads)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise SystemExit(printable(f"{path}: not a saved run ({type(e).__name__}: {e})")) from None
    if not isinstance(data, dict) or not isinstance(data.get("workloads"), list):
        raise SystemExit(printable(f"{path}: not a saved run (no list of workloads in it)"))
    return data


def outcomes_of(path: Path, data: dict[str, Any]) -> list[Outcome]:
    """The outcomes of ``read_results``'s ``data``; SystemExit with one line where one of its
    workloads is not as ``to_json`` writes it."""
    try:
        return [from_json(w) for w in data["workloads"]]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        why = f"{type(e).__name__}: {e}"
        raise SystemExit(printable(f"{path}: a workload in it is not as saved ({why})")) from None


def combine(paths: Sequence[Path]) -> tuple[list[Outcome], tuple[int, int], int]:
    """The outcomes of several ``results.json``, a later file's workload replacing an earlier
    one of the same name (a workload run again on its own), in the order first seen; the
    repeats and CPUs of the first file (the others must match them)."""
    by_name: dict[str, Outcome] = {}
    first = read_results(paths[0])
    missing = [key for key in ("cpus", "repeat", "verify_repeat") if key not in first]
    if missing:
        raise SystemExit(printable(f"{paths[0]}: not a saved run (no {', '.join(missing)} in it)"))
    for path in paths:
        data = read_results(path)
        same = (data.get("cpus"), data.get("repeat"), data.get("verify_repeat"))
        if same != (first.get("cpus"), first.get("repeat"), first.get("verify_repeat")):
            raise SystemExit(printable(f"{path}: CPUs and repeats differ from {paths[0]}'s"))
        for outcome in outcomes_of(path, data):
            by_name[outcome.name] = outcome
    return list(by_name.values()), (first["repeat"], first["verify_repeat"]), first["cpus"]


def rescore(folder: Path) -> tuple[list[Outcome], tuple[int, int], int]:
    """The saved outcomes of ``folder`` (``--output`` of an earlier run), each recording
    analysed again with this tree's rules: an advice given again (same finding, same setting)
    keeps its verification, one no longer given is dropped, and one given now that was not
    then counts as given and not verified. The sweeps stand as they ran."""
    outcomes, repeats, cpus = combine([folder / "results.json"])
    for o in outcomes:
        record = folder / o.name / "record"
        if not record.is_dir():
            o.errors.append("rescore: the recording is missing")
            continue
        before = {(a.id, tuple(a.advised), a.env): a for a in o.advice}
        given = _advice_of(tftrace.analyze(tftrace.load(record)).findings)
        o.advice = [before.get((a.id, tuple(a.advised), a.env), a) for a in given]
    return outcomes, repeats, cpus


def versions(paths: Sequence[Path]) -> str | None:
    """The tftrace versions (``source_version``) the ``results.json`` files were run with."""
    found = [read_results(path).get("tftrace") for path in paths]
    named = list(dict.fromkeys(v for v in found if v))
    return "; ".join(named) if named else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}, repeat 3")
    parser.add_argument(
        "--repeat", type=int, help=f"timed runs per setting in a sweep (default {DEFAULT_REPEAT})"
    )
    parser.add_argument(
        "--verify-repeat",
        type=int,
        help=f"timed runs per setting in a verification (default {DEFAULT_VERIFY_REPEAT})",
    )
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument(
        "--output", type=Path, help="directory for everything (default: a temp dir)"
    )
    parser.add_argument("--markdown", type=Path, help="write the result as Markdown here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--combine",
        type=Path,
        nargs="+",
        metavar="RESULTS",
        help="run nothing: score saved results.json files, a later file's workload replacing "
        "an earlier one of the same name (one workload rerun with --only)",
    )
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="DIR",
        help="run nothing: analyse the recordings saved in DIR (an earlier --output) again "
        "with this tree's rules and score them (an advice given again keeps its verification)",
    )
    args = parser.parse_args(argv)
    if args.rescore:
        outcomes, repeats, cpus = rescore(args.rescore)
        then = versions([args.rescore / "results.json"])
        return report(
            outcomes, cpus, repeats, args, version=f"{source_version()} (rules); runs: {then}"
        )
    if args.combine:
        outcomes, repeats, cpus = combine(args.combine)
        return report(outcomes, cpus, repeats, args, version=versions(args.combine))

    cpus = len(os.sched_getaffinity(0))
    entries = corpus(cpus)
    names = [w.name for w in entries]
    wanted = list(QUICK) if args.quick else None
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
    if wanted is not None:
        unknown = [n for n in wanted if n not in names]
        if unknown:
            parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(names)}")
        entries = [w for w in entries if w.name in wanted]
    repeat = args.repeat or (QUICK_REPEAT if args.quick else DEFAULT_REPEAT)
    verify_repeat = args.verify_repeat or (QUICK_REPEAT if args.quick else DEFAULT_VERIFY_REPEAT)
    if min(repeat, verify_repeat) < 1:
        parser.error("--repeat and --verify-repeat must be >= 1")
    repeats = (repeat, verify_repeat)
    out = args.output or Path(tempfile.mkdtemp(prefix="tftrace-diagnosis-"))
    out.mkdir(parents=True, exist_ok=True)
    busy = [w.name for w in entries if (out / w.name).exists() and any((out / w.name).iterdir())]
    if busy:
        parser.error(f"{out} already holds results for {', '.join(busy)}: give another --output")

    version = source_version()  # before the runs: the rules this process has imported
    _say(f"{len(entries)} workload(s), {cpus} CPUs, repeat {repeats}, output in {out}")
    _say(f"tftrace {version}")
    outcomes = []
    started = time.monotonic()
    for i, w in enumerate(entries, 1):
        _say(f"[{i}/{len(entries)}] {w.name}: {w.about}")
        t0 = time.monotonic()
        outcomes.append(run_one(w, cpus, repeats, out / w.name))
        _say(f"  done in {time.monotonic() - t0:.0f} s")

    print(f"\n{len(outcomes)} workload(s) in {time.monotonic() - started:.0f} s; runs in {out}")
    return report(outcomes, cpus, repeats, args, out, version)


def report(
    outcomes: list[Outcome],
    cpus: int,
    repeats: tuple[int, int],
    args: argparse.Namespace,
    out: Path | None = None,
    version: str | None = None,
) -> int:
    """Print the table and the figures; write ``results.json`` into ``out`` and the Markdown
    where asked; the exit status."""
    body = rows(outcomes)
    print(text_table(HEADER, body))
    errors = [f"{o.name}: {e}" for o in outcomes for e in o.errors]
    if errors:
        print("\nerrors:")
        print("\n".join(f"  {e}" for e in errors))
    p_line, p_ok = judgement("precision", *precision(outcomes), PRECISION_TARGET)
    r_line, r_ok = judgement("recall", *recall(outcomes), RECALL_TARGET)
    notes = load_notes(outcomes)
    print()
    print(p_line)
    print(r_line)
    for line in notes:
        print(line)
    if out is not None:
        _write_results(out, outcomes, cpus, repeats, version)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        figures = [p_line, r_line, *notes]
        args.markdown.write_text(markdown(outcomes, cpus, repeats, figures, version))
        print(f"wrote {args.markdown}")
    failed = p_ok is False or r_ok is False or bool(errors)
    return 1 if args.check and failed else 0


def _write_results(
    out: Path,
    outcomes: list[Outcome],
    cpus: int,
    repeats: tuple[int, int],
    version: str | None = None,
) -> None:
    repeat, verify_repeat = repeats
    (out / "results.json").write_text(
        json.dumps(
            {
                "tftrace": version,
                "cpus": cpus,
                "repeat": repeat,
                "verify_repeat": verify_repeat,
                "gain": GAIN,
                "precision": ratio(*precision(outcomes)),
                "recall": ratio(*recall(outcomes)),
                "workloads": [to_json(o) for o in outcomes],
            },
            indent=2,
            default=str,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
