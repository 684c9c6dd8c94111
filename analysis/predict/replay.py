"""Replay one step's units on a setting: ``inter`` inter-op threads, an Eigen pool of ``intra``
workers, ``cores`` cores.

A fluid model, event by event:

- The main thread runs its unit from the step's start. A closure becomes runnable at its
  Record (a ``SPAWN`` of the unit that scheduled it; a closure without one at its recorded
  start) and waits for one of the ``inter`` inter-op threads, queued as Eigen's pool queues
  it: one scheduled on an inter-op thread goes to the front of that thread's own queue, and
  the thread, once free, runs the last it scheduled first; one scheduled from outside (a
  step's or a request's first) waits first come first served; a free thread with neither
  takes the oldest of another thread's queue (a steal): with every inter-op thread busy a
  request runs its closures to the end before the next request's first one starts. A
  thread that waits for what it scheduled (``JOIN``) gives its inter-op thread back and is
  queued again, on the thread that ran the last of them, when that one ends.
- Waking an inter-op thread (``inter_wake``, where the recording measures it: ``wakeup.py``):
  a thread idle since before the closure was queued takes it only once up: the one spinning
  (below) as an awake one, else the last to sleep, woken; one per closure queued. Meanwhile
  the closure stays queued, and the thread that scheduled it takes it back if it is free first
  (Eigen's pool pops a thread's own queue from the front, a thief takes the back).
  Taken at once, a Keras loop's closures of 2-3 us ran side by side for free.
- An op runs its phases (``op_phases.py``): its hand-off costs what waking the pool does in
  the state the replay finds it in (``wakeup.py``); its parallel part runs over the Eigen
  workers it gets, the ops in that part sharing the pool (``intra`` / their count each),
  and its own thread at the ``caller`` share of a core the recording showed.
- Busy threads beyond the cores share them: with ``d`` threads wanting a core, each gets
  ``min(1, cores / d)`` of one (processor sharing). ``WAITS`` segments (Python, input, the
  main thread outside ops) keep their recorded time, but for the share of a core their
  thread used then (its ``load``, by the OS sampler: Python works, a blocked thread does
  not): that part wants a core and shares them as work does; what the replay does not run
  holds ``background`` cores throughout (``left_to``). The time an op runs split while the
  threads that want a core outnumber the cores is counted (``crowded_ns``).
- More workers than cores: an op split alone over more workers than the cores, a block
  each, is slowed by its most loaded core's queue (``placement.py``), and the cores its
  queue leaves idle go to the other threads.
- The Eigen pool's spin: once no op is in its parallel part, the pool's ``intra`` workers spin
  for ``spin_ns`` before they sleep, each wanting a core as a busy thread does
  (``background.py`` measures it): at inter-op 1 the pool runs dry after every op, and the
  op's thread shares the cores with them until the next. The inter-op pool is the same Eigen
  pool, which leaves one idle thread spinning: an inter-op thread out of work wants a core
  for ``spin_ns`` too, one at a time (Eigen's ``kMaxSpinningThreads``).
- The interpreter lock: the CPU part of the waits that run Python (a thread's time outside
  its ops, a ``tf.py_function``) holds it, so all of them together run at most one core's
  worth: with Python wanting ``g`` > 1 cores, each gets ``1 / g`` of what it wants (a
  server's request threads, sped up elsewhere, queue here). That Python has its core first,
  as long as one is left to the other threads, which share the rest: the lock's waiters,
  woken at each hand-off, are as runnable as its holder, and the kernel shares the cores
  among runnable threads, not among locks.

The time during which only recorded waits ran (Python, input, the main thread outside ops;
not the hand-off) is counted apart (``host_ns``): what no thread setting changes. Each
rule's measurements, and what it moved: docs/predict.md, "What the model does".
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field

from tftrace.analysis.predict.background import left_to
from tftrace.analysis.predict.items import PYTHON
from tftrace.analysis.predict.op_phases import HANDOFF, INLINE, PAR, Phase, op_phases
from tftrace.analysis.predict.replayed import Replayed
from tftrace.analysis.predict.step_work import (
    CPU,
    HOST,
    JOIN,
    MARK,
    OP,
    SPAWN,
    WAITS,
    StepWork,
)
from tftrace.analysis.predict.wakeup import Wakeup

EPS = 1e-6  # ns: what is left of a phase when it is done
CROWD = 1e-9  # threads wanting a core beyond the cores, at least, for the cores to be crowded
HOLDS_GIL = (HOST, PYTHON)  # the waits whose CPU part is the interpreter's
MAX_EVENTS = 10_000_000  # a guard: a step's replay ends, whatever its units hold


@dataclass
class _State:
    """A unit as the replay runs it: its next segment, the phases left of the current one."""

    unit: int
    main: bool
    seg: int = 0
    phases: deque[Phase] = field(default_factory=deque)
    kind: str = ""  # CPU, INLINE, PAR, WAITS or JOIN
    left: float = 0.0
    cap: float = 1.0  # PAR: the most Eigen workers it can use
    why: str = ""
    load: float = 0.0  # WAITS: the share of a core it holds while it waits (its Python)
    slow: float = 1.0  # PAR: its blocks queued on too few cores (``placement.py``)
    waits: set[int] = field(default_factory=set)
    slot: int = -1  # the inter-op thread it runs on; -1: none (a main unit, or joined)

    @property
    def on_thread(self) -> bool:
        return self.slot >= 0


class _Replay:
    def __init__(
        self,
        step: StepWork,
        intra: int,
        inter: int,
        cores: float,
        rec_intra: int,
        caller: float,
        background: float,
        beside_python: float,
        spin_ns: float,
        wake: Wakeup | None,
        inter_wake: Wakeup | None,
    ):  # ``replay``'s arguments
        self.units = step.units
        self.spin_ns, self.wake, self.inter_wake = spin_ns, wake, inter_wake
        self.idle_since = [-float("inf")] * inter  # when each inter-op thread last went idle
        self.spinner, self.spin_until = -1, -float("inf")  # the idle one spinning, until when
        self.waking: list[tuple[float, int]] = []  # (when it is up, slot), in time order
        self.pool_used = -spin_ns  # when an op was last in its parallel part
        self.caller = caller
        self.beside = beside_python
        # what others hold is theirs: their share does not shrink as the pools grow (a
        # process pinned to a CPU keeps it; the shards queued behind it wait for it)
        self.intra, self.cores, self.rec_intra = intra, left_to(cores, background), rec_intra
        self.idle = list(range(inter))  # the inter-op threads free, by slot
        self.local: list[deque[int]] = [deque() for _ in range(inter)]
        self.done = [False] * len(self.units)
        self.undone = len(self.units)
        self.states: dict[int, _State] = {}
        self.queue: deque[int] = deque()
        self.joined: dict[int, _State] = {}
        self.releases = sorted(
            (u.release_ns, k) for k, u in enumerate(self.units) if k and u.release_ns is not None
        )
        self.t = 0.0
        self.host = 0.0
        self.crowded = 0.0
        self.marks: dict[tuple[int, str], float] = {}

    def run(self) -> Replayed:
        for k, unit in enumerate(self.units):
            if unit.main:
                self._start(k)
        for _ in range(MAX_EVENTS):
            while self.releases and self.releases[0][0] <= self.t + EPS:
                self.queue.append(self.releases.pop(0)[1])
            while self.waking and self.waking[0][0] <= self.t + EPS:
                self._idle(self.waking.pop(0)[1])
            self._dispatch()
            if not self.undone:
                break
            active = [s for s in self.states.values() if s.kind != JOIN and (s.main or s.on_thread)]
            if not active:
                due = [t for t, _ in self.releases[:1] + self.waking[:1]]
                if not due:
                    break  # nothing left can run (not expected of a recorded step)
                self.t = min(due)
                continue
            self._advance(active)
        return Replayed(self.t, self.host, self.marks, self.crowded)

    def _advance(self, active: list[_State]) -> None:
        # one pass over the active units, each sum kept in the order it always was
        pars: list[_State] = []
        in_python: list[_State] = []
        working, python, waiting, host = 0, 0.0, 0.0, True
        for s in active:
            kind = s.kind
            if kind == WAITS:
                if s.why in HOLDS_GIL:
                    in_python.append(s)
                    python += s.load
                else:
                    waiting += s.load
                    host = host and s.why != HANDOFF
                continue
            host = False
            if kind == PAR:
                pars.append(s)
            elif kind in (CPU, INLINE):
                working += 1
        workers = self.intra / len(pars) if pars else 0.0
        lanes = {s.unit: self.caller + min(workers, s.cap) for s in pars}
        demand = working + sum(lanes.values())
        spinning = self.intra > 1 and not pars and self.t < self.pool_used + self.spin_ns - EPS
        if spinning:
            demand += self.intra
        inter_spin = self._inter_spin_ends()
        if inter_spin < float("inf"):
            demand += 1.0
        demand += waiting + self.beside * len(in_python)
        # the interpreter lock's Python (at most a core's worth) runs first, as long as a core
        # is left to the others; they share what it leaves
        wants = min(python, 1.0)
        total = demand + wants
        fair = min(1.0, self.cores / total) if total > 0 else 1.0
        lead = min(wants, max(self.cores - 1.0, fair * wants))
        locked = lead / python if python > 0 else 1.0
        cores_left = self.cores - lead
        share = min(1.0, cores_left / demand) if demand > 0 else 1.0
        # one op split alone, its blocks queued on too few cores: it gets 1 / slow of its
        # due, and the cores it leaves idle go to the others that want one
        slowed = pars[0].unit if len(pars) == 1 and pars[0].slow > 1.0 else -1
        slowed_share = share
        if slowed >= 0:
            mine = lanes[slowed]
            got = share * mine / pars[0].slow
            slowed_share, others = got / mine, demand - mine
            share = min(1.0, (cores_left - got) / others) if others > 0 else 1.0
        # how fast each moves through its phase: work at its share of the cores (an op in its
        # parallel part, on its lanes), a wait as recorded but for its CPU part; a thread in
        # Python whose BLAS pool works beside it ends as the slower of the two
        blas = min(self.beside, 1.0)
        rates: list[float] = []
        dt = float("inf")
        for s in active:
            if s.unit == slowed:
                rate = slowed_share * lanes[slowed]
            elif s.kind != WAITS:
                rate = share * lanes.get(s.unit, 1.0)
            elif s.why not in HOLDS_GIL:
                rate = 1 - s.load + s.load * share
            else:
                rate = min(1 - s.load + s.load * locked, 1 - blas + blas * share)
            rates.append(rate)
            dt = min(dt, s.left / rate)
        if self.releases:
            dt = min(dt, self.releases[0][0] - self.t)
        if self.waking:
            dt = min(dt, self.waking[0][0] - self.t)
        if spinning:
            dt = min(dt, self.pool_used + self.spin_ns - self.t)
        dt = min(dt, inter_spin - self.t)
        dt = max(dt, 0.0)
        if host:
            self.host += dt
        split = pars or (in_python and self.beside > 0)  # a BLAS product splits too
        if split and total > self.cores + CROWD:
            self.crowded += dt
        self.t += dt
        if pars:
            self.pool_used = self.t
        for s, rate in zip(active, rates, strict=True):
            s.left -= rate * dt
        for s in active:
            if s.left <= EPS and s.unit in self.states:
                self._next(s)

    def _inter_spin_ends(self) -> float:
        """When the idle inter-op thread that spins now stops (inf: none spins)."""
        return self.spin_until if self.spin_until > self.t + EPS else float("inf")

    def _start(self, k: int, slot: int = -1) -> None:
        self.states[k] = _State(k, self.units[k].main, slot=slot)
        self._next(self.states[k])

    def _idle(self, slot: int) -> None:
        self.idle.append(slot)
        self.idle_since[slot] = self.t
        # Eigen's pool leaves one thread out of work spinning (``kMaxSpinningThreads``) for
        # ``spin_ns`` before it sleeps, wanting a core meanwhile; the others sleep at once
        if self.spin_ns > 0 and self._inter_spin_ends() == float("inf"):
            self.spinner, self.spin_until = slot, self.t + self.spin_ns

    def _busy(self, slot: int) -> None:
        """The idle inter-op thread ``slot`` has work (or is being woken for it)."""
        self.idle.remove(slot)
        if slot == self.spinner:
            self.spin_until = -float("inf")

    def _dispatch(self) -> None:
        while self.idle:
            slot = self.idle[-1]
            if self.inter_wake is not None and self._asleep(slot):
                # one idle thread up per closure queued (the spinning one, else the last to
                # sleep); the closure stays queued meanwhile: its scheduler, once free, may take it
                if len(self.waking) >= len(self.queue) + sum(len(q) for q in self.local):
                    return
                spinning = self._inter_spin_ends() < float("inf")
                slot = self.spinner if spinning else slot
                self._busy(slot)
                wake = self.inter_wake
                up = wake.awake_ns if spinning else wake.asleep_ns
                bisect.insort(self.waking, (self.t + up, slot))
                continue
            k = self._take(slot)
            if k < 0:
                return
            self._busy(slot)
            if k in self.states:  # back from a join
                self.states[k].slot = slot
                self._next(self.states[k])
            else:
                self._start(k, slot)

    def _asleep(self, slot: int) -> bool:
        """Whether the idle inter-op thread ``slot`` must be woken (or stop spinning) for work
        another thread scheduled: it went idle before now and has none of its own."""
        return self.t - self.idle_since[slot] > EPS and not self.local[slot]

    def _take(self, slot: int) -> int:
        """The next closure for the free inter-op thread ``slot``: the last one it scheduled
        itself (Eigen's pool pushes a task scheduled from one of its threads to the front of
        that thread's queue, and the thread pops its front), else the oldest from outside,
        else the oldest another thread scheduled (a steal takes a queue's back); -1: none."""
        if self.local[slot]:
            return self.local[slot].popleft()
        if self.queue:
            return self.queue.popleft()
        for other in self.local:
            if other:
                return other.pop()
        return -1

    def _spawn(self, s: _State, k: int) -> None:
        if s.on_thread:
            self.local[s.slot].appendleft(k)
        else:
            self.queue.append(k)

    def _next(self, s: _State) -> None:
        """Move ``s`` to its next phase that takes time, running instant segments on the way."""
        segments = self.units[s.unit].segments
        while True:
            while s.phases:
                s.kind, s.left, s.cap, s.why, s.load, s.slow = s.phases.popleft()
                if s.why == HANDOFF and self.wake is not None:
                    s.left += self._handoff(self.wake)
                if s.left > EPS:
                    return
            if s.seg == len(segments):
                self._finish(s)
                return
            seg = segments[s.seg]
            s.seg += 1
            if seg.kind == SPAWN and seg.ns > 0:  # an orphan its call releases later
                bisect.insort(self.releases, (self.t + seg.ns, seg.units[0]))
            elif seg.kind == SPAWN:
                self._spawn(s, seg.units[0])
            elif seg.kind == MARK:
                self.marks[(seg.units[0], seg.why)] = self.t
            elif seg.kind == JOIN:
                s.waits = {u for u in seg.units if not self.done[u]}
                if s.waits:
                    s.kind = JOIN
                    self.joined[s.unit] = s
                    if not s.main:
                        self._idle(s.slot)
                        s.slot = -1
                    return
            elif seg.kind == OP and seg.op is not None:
                s.phases.extend(op_phases(seg.op, self.intra, self.rec_intra, self.cores))
            elif seg.kind == CPU:
                s.phases.append((CPU, seg.ns, 1.0, "", 0.0, 1.0))
            elif seg.kind == WAITS:
                s.phases.append((WAITS, seg.ns, 1.0, seg.why, seg.load, 1.0))

    def _handoff(self, wake: Wakeup) -> float:
        """What handing shards to the pool costs now (``wakeup.py``): awake while an op is in
        its parallel part or the pool spins, else asleep."""
        awake = self.t <= self.pool_used + self.spin_ns + EPS
        return wake.awake_ns if awake else wake.asleep_ns

    def _finish(self, s: _State) -> None:
        self.done[s.unit] = True
        self.undone -= 1
        del self.states[s.unit]
        if s.on_thread:
            self._idle(s.slot)
        for j, other in list(self.joined.items()):
            other.waits.discard(s.unit)
            if not other.waits:
                del self.joined[j]
                other.kind = ""
                if other.main:
                    self._next(other)
                else:  # resumed by the thread that ran the last of its closures
                    self._spawn(s, j)


def replay(
    step: StepWork,
    intra: int,
    inter: int,
    cores: float,
    recorded_intra: int,
    caller: float = 1.0,
    background: float = 0.0,
    beside_python: float = 0.0,
    spin_ns: float = 0.0,
    wake: Wakeup | None = None,
    inter_wake: Wakeup | None = None,
) -> Replayed:
    """The span of ``step`` replayed on ``inter`` inter-op threads, ``intra`` Eigen workers and
    ``cores`` cores (``recorded_intra``: the pool its shards were recorded on; ``caller``: the
    share of a core an op's own thread takes, and works with, while its shards run;
    ``background``: cores held by what the replay does not run; ``beside_python``: cores a
    BLAS pool works beside each thread running Python; ``spin_ns``: how long the Eigen workers
    spin once out of work, ``background.py``; ``wake``: what a hand-off to the pool costs,
    awake or asleep, ``wakeup.py``; None: each op's recorded one; ``inter_wake``: what waking
    an inter-op thread for a closure costs; None: nothing, a free thread takes it at once)."""
    return _Replay(
        step,
        intra,
        inter,
        cores,
        recorded_intra,
        caller,
        background,
        beside_python,
        spin_ns,
        wake,
        inter_wake,
    ).run()
