"""What one setting of a sweep is, and how a sweep's knobs become settings.

A setting sizes TF's two pools and may turn other knobs: environment variables (OpenMP's,
OpenBLAS's, oneDNN's...) and the CPUs the process runs on (pinned to the first K the sweep may
use). A sweep crosses every knob's values (``Axes``); ``tftrace.verify`` builds its settings
from a finding's advice. Standard library only: a finding (``AdvisedSetting``) uses the words
and checks here too.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tftrace.errors import TftraceError

from .environment import POOL_ENV_VARS


class SweepError(TftraceError):
    """A sweep that cannot go on (one line for the user)."""


# An environment knob's name: capitals, digits and _, as the thread libraries spell theirs. It
# doubles as the knob's column in a sweep's tables, where every other column is lower case.
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# Variables that choose which code runs (the dynamic loader's, Python's), not how it runs.
CODE_CHOOSING = ("LD_", "PYTHON")
CODE_CHOOSING_NAMES = ("PATH",)
EnvVars = tuple[tuple[str, str | None], ...]  # (name, value; None: removed), in order


def env_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a setting's environment variable, or None when it can."""
    if not ENV_NAME.fullmatch(name):
        return (
            f"{name!r} is not an environment variable's name here (capitals, digits and _, "
            "e.g. OMP_NUM_THREADS)"
        )
    if name in POOL_ENV_VARS.values():
        return f"{name} sizes a pool: give the sizes as intra/inter"
    if name.startswith(CODE_CHOOSING) or name in CODE_CHOOSING_NAMES:
        return f"{name} chooses which code runs, not a setting of it"
    return None


def env_value_problem(name: str, value: str) -> str | None:
    if value == "":
        return f"{name}: an empty value (give e.g. {name}=1,2)"
    if "\0" in value:
        return f"{name}: a value with a NUL character"
    return None


def env_words(env: Iterable[tuple[str, str | None]]) -> list[str]:
    """``["OMP_NUM_THREADS=1", "MKL_NUM_THREADS unset"]``."""
    return [f"{n}={v}" if v is not None else f"{n} unset" for n, v in env]


def cpus_words(cpus: int) -> str:
    return f"{cpus} CPU{'s' * (cpus != 1)}"


def first_cpus(usable: Iterable[int], count: int) -> tuple[int, ...]:
    """The first ``count`` of the ``usable`` CPUs, by number: where a setting pins to K."""
    return tuple(sorted(usable)[:count])


@dataclass(frozen=True, order=True)
class Setting:
    """One process's setting: pool sizes (None leaves the pool to TF and the user's
    environment), ``env_vars`` set in its environment (a None value removes the variable) and
    ``cpus``, the count of usable CPUs it is pinned to (the first ones; None: not pinned).

    With ``instances``, that many copies of the workload run at once, each pinned to its own
    ``cores`` CPUs, with these pool sizes each (a sweep fills them in: the share, unless it
    sweeps them)."""

    intra: int | None
    inter: int | None
    instances: int | None = None  # copies run at once; None: one process
    cores: int | None = None  # the CPUs each copy is pinned to
    env_vars: EnvVars = ()
    cpus: int | None = None  # pinned to the first this-many usable CPUs; None: all of them

    def env(self) -> dict[str, str | None]:
        """The variables the process gets (None: removed): the pools' and ``env_vars``."""
        out: dict[str, str | None] = {}
        if self.intra is not None:
            out[POOL_ENV_VARS["intra_op"]] = str(self.intra)
        if self.inter is not None:
            out[POOL_ENV_VARS["inter_op"]] = str(self.inter)
        out.update(self.env_vars)
        return out

    def pinned(self, usable: Sequence[int]) -> tuple[int, ...] | None:
        """The CPUs a lone process runs on: the first ``cpus`` of ``usable``; None: all."""
        return None if self.cpus is None else first_cpus(usable, self.cpus)

    def words(self) -> list[str]:
        """Each knob in words: pools, environment variables, CPUs (not the copies)."""
        out = [f"intra {_value(self.intra)}", f"inter {_value(self.inter)}"]
        out += env_words(self.env_vars)
        return out + ([cpus_words(self.cpus)] if self.cpus is not None else [])

    def label(self) -> str:
        """E.g. ``intra 1 · inter default · OMP_NUM_THREADS=1 · 1 CPU``."""
        knobs = " · ".join(self.words())
        if self.instances is None:
            return knobs
        return f"{_count(self.instances, 'instance')} x {_count(self.cores or 0, 'core')} · {knobs}"

    def slug(self) -> str:
        """The setting in a directory's name: only letters, digits, ``_``, ``-`` and ``.``."""
        pools = f"intra{_value(self.intra)}-inter{_value(self.inter)}"
        head = pools if self.instances is None else f"{self.instances}x{self.cores}cpu-{pools}"
        knobs = [f"{n}-{'unset' if v is None else v}" for n, v in self.env_vars]
        knobs += [f"cpus{self.cpus}"] if self.cpus is not None else []
        if not knobs:
            return head
        text = "-".join([head, *knobs])
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:120]
        if safe != text:  # two values must not share a directory once made safe
            safe += "-" + _digest(text)
        return safe

    def threads(self, cpus: int) -> int:
        """Threads this setting starts, over all its copies: its pools' (TF's default is one
        per CPU the process may use) and those of the ``*_NUM_THREADS`` variables it sets (a
        library's default, where it removes one, also one per CPU)."""
        each = self.cores if self.instances is not None and self.cores else (self.cpus or cpus)
        pools = sum(each if v in (None, 0) else v for v in (self.intra, self.inter))
        for name, value in self.env_vars:
            if name.endswith("_NUM_THREADS"):
                pools += each if value is None else int(value) if value.isdigit() else 0
        return pools * (self.instances or 1)

    def key(self) -> tuple[Any, ...]:
        """What tells settings apart: (intra, inter), the instances when there are copies,
        then ("cpus", K) and the variables by name, when the setting has them."""
        key: tuple[Any, ...] = (self.intra, self.inter)
        if self.instances is not None:
            key += (self.instances,)
        if self.cpus is not None:
            key += (("cpus", self.cpus),)
        return key + tuple(sorted(self.env_vars, key=lambda kv: kv[0]))

    def columns(self) -> dict[str, Any]:
        """The setting as a row of a sweep's tables: intra, inter, instances and cores with
        copies, one column per variable (its name, in capitals), and cpus when pinned."""
        out: dict[str, Any] = {"intra": self.intra, "inter": self.inter}
        if self.instances is not None:
            out.update(instances=self.instances, cores=self.cores)
        out.update(self.env_vars)
        if self.cpus is not None:
            out["cpus"] = self.cpus
        return out

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"intra": self.intra, "inter": self.inter}
        if self.instances is not None:
            out.update(instances=self.instances, cores=self.cores)
        if self.env_vars:
            out["env"] = dict(self.env_vars)
        if self.cpus is not None:
            out["cpus"] = self.cpus
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Setting:
        """A setting as ``to_json`` (and sweep.json's rows) write it."""
        env = data.get("env") or {}
        return cls(
            data.get("intra"),
            data.get("inter"),
            data.get("instances"),
            data.get("cores"),
            tuple((str(n), None if v is None else str(v)) for n, v in env.items()),
            data.get("cpus"),
        )


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def _value(v: int | None) -> str:
    return "default" if v is None else "0 (default)" if v == 0 else str(v)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def ladder(cpus: int) -> list[int]:
    """1, 2, 4, ... up to the CPU count, the CPU count, and one step beyond it."""
    values = [1]
    while values[-1] * 2 < cpus:
        values.append(values[-1] * 2)
    if values[-1] != cpus:
        values.append(cpus)
    beyond = 2 ** math.ceil(math.log2(cpus + 1))
    values.append(beyond)
    return values


def parse_values(text: str | None, cpus: int, what: str) -> list[int | None]:
    """``"1,2,4"`` or ``"auto"``; None (not given) means: leave this pool alone."""
    if text is None:
        return [None]
    if text.strip() == "auto":
        return list(ladder(cpus))
    values: list[int | None] = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise SweepError(
                f"--{what}: {part!r} is not a number (give e.g. 1,2,4 or auto)"
            ) from None
        if value < 0:
            raise SweepError(f"--{what}: thread counts must be >= 0 (0 = TF's default)")
        if value not in values:
            values.append(value)
    return values


def parse_instances(text: str | None, cpus: int) -> list[int] | None:
    """``"1,2,4"``: instance counts, one (a single process on all the CPUs) always first;
    None when not given. Each count must fit the CPUs, one CPU a copy at least."""
    if text is None:
        return None
    counts = [1]
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise SweepError(f"--instances: {part!r} is not a number (give e.g. 1,2,4)") from None
        if value < 1:
            raise SweepError("--instances: counts must be >= 1")
        if value > cpus:
            raise SweepError(
                f"--instances {value}: more copies than the {cpus} CPUs this process may use "
                "(each copy gets its own CPUs)"
            )
        if value not in counts:
            counts.append(value)
    return counts


def parse_cpus(text: str | None, cpus: int) -> list[int | None]:
    """``"1,2"``: CPU counts to pin to (the first K usable CPUs); [None] when not given."""
    if text is None:
        return [None]
    counts: list[int | None] = []
    for part in text.split(","):
        try:
            value = int(part)
        except ValueError:
            raise SweepError(f"--cpus: {part!r} is not a number (give e.g. 1,2)") from None
        if not 1 <= value <= cpus:
            raise SweepError(f"--cpus {value}: give 1 to {cpus}, the CPUs this process may use")
        if value not in counts:
            counts.append(value)
    return counts


EnvSpec = Mapping[str, str | Sequence[str | int]] | Sequence[str] | None


def parse_env(spec: EnvSpec) -> list[tuple[str, list[str]]]:
    """Environment knobs and their values, in order: ``["OMP_NUM_THREADS=1,2", ...]`` as
    the command line gives them, or ``{"OMP_NUM_THREADS": [1, 2]}`` (a value may be a
    string of comma-separated values too). Names and values are checked here."""
    if spec is None:
        return []
    pairs: list[tuple[str, str | Sequence[str | int]]] = []
    if isinstance(spec, Mapping):
        pairs = list(spec.items())
    elif isinstance(spec, str):
        raise SweepError(f"--env {spec}: give a list of NAME=V1,V2 (or a dict)")
    else:
        for text in spec:
            name, sep, listed = text.partition("=")
            if not sep:
                raise SweepError(f"--env {text}: give NAME=V1,V2 (e.g. OMP_NUM_THREADS=1,2)")
            pairs.append((name, listed))
    out: list[tuple[str, list[str]]] = []
    for name, given in pairs:
        problem = env_name_problem(name)
        if problem is not None:
            raise SweepError(f"--env: {problem}")
        if name in (n for n, _ in out):
            raise SweepError(f"--env {name}: given twice (give its values once: {name}=1,2)")
        parts = given.split(",") if isinstance(given, str) else [str(v) for v in given]
        values = list(dict.fromkeys(parts))
        if not values:
            raise SweepError(f"--env {name}: no values (give e.g. {name}=1,2)")
        for value in values:
            problem = env_value_problem(name, value)
            if problem is not None:
                raise SweepError(f"--env {problem}")
        out.append((name, values))
    return out


@dataclass(frozen=True)
class Axes:
    """What a sweep crosses, each knob's values in the order given: pool sizes, environment
    variables, CPU counts to pin to; or, with ``instances``, copy counts (each with its
    share of the CPUs) instead of CPU counts."""

    intra: list[int | None]
    inter: list[int | None]
    env: list[tuple[str, list[str]]] = field(default_factory=list)
    cpus: list[int | None] = field(default_factory=lambda: [None])
    instances: list[int] | None = None
    usable: int = 1  # the CPUs this process may use, which copies share out

    def count(self) -> int:
        """How many settings the axes make (their product, without building it)."""
        n = len(self.intra) * len(self.inter) * len(self.cpus)
        for _, values in self.env:
            n *= len(values)
        return n * (len(self.instances) if self.instances else 1)

    def words(self) -> str:
        """The axes in words, e.g. ``intra 1,2 x OMP_NUM_THREADS 1,2 x cpus 1,2``: each knob
        that varies, or the pools when none does."""
        axes: list[tuple[str, Sequence[object]]] = [("intra", self.intra), ("inter", self.inter)]
        axes += [(name, values) for name, values in self.env]
        axes += [("cpus", self.cpus), ("instances", self.instances or [None])]
        shown = [(n, v) for n, v in axes if len(v) > 1]
        return " x ".join(f"{n} {','.join(map(str, v))}" for n, v in shown) or "one setting"

    def settings(self) -> list[Setting]:
        """Every combination, the intra-op size varying fastest, then inter-op, then each
        variable (the last given slowest), then the CPUs; the first is every knob's first."""
        pools = (
            grid(self.intra, self.inter)
            if self.instances is None
            else instance_grid(self.instances, self.intra, self.inter, self.usable)
        )
        names = [name for name, _ in self.env]
        combos = list(itertools.product(*(values for _, values in reversed(self.env))))
        out: list[Setting] = []
        for cpus in self.cpus:
            for combo in combos:
                env = tuple(zip(names, reversed(combo), strict=True))
                for s in pools:
                    out.append(Setting(s.intra, s.inter, s.instances, s.cores, env, cpus))
        return out


def grid(intra: Sequence[int | None], inter: Sequence[int | None]) -> list[Setting]:
    return [Setting(a, e) for e in inter for a in intra]


def shares(cpus: Sequence[int], instances: int) -> list[tuple[int, ...]]:
    """The CPUs split into ``instances`` contiguous equal shares, in order (CPUs left over
    when the count does not divide them stay unused)."""
    ordered = sorted(cpus)
    size = len(ordered) // instances
    return [tuple(ordered[i * size : (i + 1) * size]) for i in range(instances)]


def instance_grid(
    instances: Sequence[int],
    intra: Sequence[int | None],
    inter: Sequence[int | None],
    cpus: int,
) -> list[Setting]:
    """Every instance count with every pool setting; a pool the sweep does not size (None)
    gets one thread per CPU of the copy's share."""
    out: list[Setting] = []
    for k in instances:
        cores = cpus // k
        for e in inter:
            for a in intra:
                setting = Setting(cores if a is None else a, cores if e is None else e, k, cores)
                if setting not in out:
                    out.append(setting)
    return out


def schedule(settings: Sequence[Setting], repeat: int) -> list[tuple[int, Setting]]:
    """Round-robin: every setting once per round."""
    return [(r, s) for r in range(repeat) for s in settings]
