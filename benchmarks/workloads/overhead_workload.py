"""A fixed CPU workload that times its own steady state, for ``benchmarks/record_overhead.py``.

Each step calls a ``tf.function`` chaining ``--small-matmuls`` products of
``--small-size`` square matrices (many tiny ops: inter-op scheduling and per-op
profiler events); every ``--big-every`` steps it also runs ``--big-matmuls`` eager
products of ``--big-size`` square matrices (large ops split across the intra-op/Eigen
pool). The defaults take about 4 s of steady state on 2 cores. After
``--warmup`` untimed steps (tracing, allocator and pool start-up), ``--steps``
steps are timed and one line is printed:

    WORKLOAD_SECONDS=<float>

Run it plain (``python benchmarks/workloads/overhead_workload.py``) or under
``tftrace record``; the line is the same either way. ``--in-code DIR`` records the timed
part in code instead, ``with tftrace.profile(DIR, tf_profiler=False, pyspy=False)``
(``--in-code-pyspy``: py-spy on): the OS sampler, and py-spy, then run in a helper child
process of this one (``python -m tftrace.tracer.attach``), py-spy a child of the helper.

Paired mode (``--paired N``, instead of ``--steps``): N pairs of adjacent chunks of
``--chunk-steps`` steps, one chunk of each pair "on" and one "off", in ABBA order (off on,
on off, off on, ...) so that a linear drift of the machine cancels. With
``--toggle recorder`` the workload must run under ``tftrace record``: it stops its parent,
the recorder (the /proc sampler is one of its threads), and the recorder's py-spy child with
SIGSTOP for the "off" chunks and continues them with SIGCONT for the "on" ones; the TF
profiler and tftrace's in-process bootstrap stay on in both. ``--toggle helper`` (with
``--in-code``) stops and continues the recording's helper and its py-spy child the same
way; the in-process part of ``tftrace.profile`` (the thread identity watcher) stays on in
both, and the helper runs again before the block ends (its stop handshake needs it).
``--toggle none`` changes nothing between the two (an A/A control: the ratio is the
estimator's noise floor). Each chunk is preceded by ``--settle-steps`` untimed steps:
py-spy takes the samples it missed while stopped in a burst once continued, and that burst
must not land in the timed chunk. Besides WORKLOAD_SECONDS (the sum of the timed chunks),
one JSON line is printed at the end (the recorder tees the workload's stdout, and a
stopped recorder reads nothing):

    PAIRED_CHUNKS={"toggled": [...], "on": {"seconds": [...], "nivcsw": [...],
                   "cpu_seconds": [...]}, "off": {...}, "stopped_seconds": ...}

``on.seconds[i]`` and ``off.seconds[i]`` belong to pair i; ``nivcsw`` (involuntary
context switches) and ``cpu_seconds`` (user + system) are the whole process's, over
the chunk, from ``getrusage``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PYSPY_WAIT_S = 10.0  # the recorder starts py-spy once the workload is ready; it may be late


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=6000, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--small-size", type=int, default=64)
    parser.add_argument("--small-matmuls", type=int, default=20, help="products per tf.function")
    parser.add_argument("--big-size", type=int, default=1000)
    parser.add_argument("--big-every", type=int, default=20, help="steps between eager products")
    parser.add_argument("--big-matmuls", type=int, default=1, help="eager products each time")
    parser.add_argument(
        "--paired", type=int, default=0, metavar="N", help="N on/off chunk pairs instead of --steps"
    )
    parser.add_argument(
        "--chunk-steps", type=int, default=40, help="timed steps per chunk (--paired)"
    )
    parser.add_argument(
        "--settle-steps", type=int, default=8, help="untimed steps before each chunk (--paired)"
    )
    parser.add_argument(
        "--toggle",
        choices=("none", "recorder", "helper"),
        default="none",
        help="what the 'off' chunks stop (--paired): nothing, the tftrace recorder and py-spy, "
        "or the --in-code recording's helper and py-spy",
    )
    parser.add_argument(
        "--in-code",
        metavar="DIR",
        help="record the timed part with tftrace.profile(DIR, tf_profiler=False, pyspy=False)",
    )
    parser.add_argument(
        "--in-code-pyspy", action="store_true", help="with --in-code: py-spy on (pyspy=True)"
    )
    args = parser.parse_args(argv)
    if args.toggle == "helper" and args.in_code is None:
        sys.exit("error: --toggle helper needs --in-code DIR (the helper is that recording's)")
    return args


def chunk_is_on(index: int) -> bool:
    """ABBA order: off on, on off, off on, ...; chunks 2i and 2i+1 are pair i."""
    return index % 4 in (1, 2)


def make_step(args: argparse.Namespace) -> Callable[[int], Any]:
    import tensorflow as tf  # here, not at the top: tests import the chunk helpers without TF

    tf.random.set_seed(0)
    n = args.small_size
    x = tf.random.normal((n, n))
    w = tf.random.normal((n, n), stddev=n**-0.5)  # keeps the chained product's scale steady
    a = tf.random.normal((args.big_size, args.big_size))
    b = tf.random.normal((args.big_size, args.big_size))

    @tf.function
    def chain(x: tf.Tensor, w: tf.Tensor) -> tf.Tensor:
        y = x
        for _ in range(args.small_matmuls):  # unrolled at trace time: separate MatMul ops
            y = tf.matmul(y, w)
        return tf.reduce_sum(y)

    def step(i: int) -> tf.Tensor:
        total = chain(x, w)
        if i % args.big_every == 0:
            for _ in range(args.big_matmuls):
                total += tf.reduce_sum(tf.matmul(a, b))
        return total

    return step


def run_steps(step: Callable[[int], Any], count: int) -> None:
    result = None
    for i in range(count):
        result = step(i)
    if result is not None:
        result.numpy()  # the last step's value: every op of the chunk has run


def timed_chunk(step: Callable[[int], Any], count: int) -> tuple[float, int, float]:
    """(wall seconds, involuntary context switches, CPU seconds) of ``count`` steps."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    run_steps(step, count)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, after.ru_nivcsw - before.ru_nivcsw, cpu


def parent_recorder() -> tuple[int, list[bytes]]:
    """The parent's pid and command line; exits when the parent is not ``tftrace record``."""
    ppid = os.getppid()
    try:
        args = Path(f"/proc/{ppid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        args = []
    if b"record" not in args or not any(b"tftrace" in a for a in args):
        sys.exit("error: --toggle recorder: the parent process is not `tftrace record`")
    return ppid, args


def children_of(parent: int) -> dict[int, str]:
    """The processes whose parent is ``parent``: pid -> name (comm)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            raw = Path(entry.path, "stat").read_bytes()
        except OSError:
            continue  # gone since the listing
        close = raw.rindex(b")")  # the name may hold spaces and ')'
        if int(raw[close + 2 :].split()[1]) == parent:
            found[int(entry.name)] = raw[raw.index(b"(") + 1 : close].decode(errors="replace")
    return found


def children_named(parent: int, comm: str) -> list[int]:
    """Processes whose parent is ``parent`` and whose name (comm) is ``comm``."""
    return [pid for pid, name in children_of(parent).items() if name == comm]


def attach_helper() -> tuple[int, bool]:
    """This process's ``tftrace.profile`` helper (a child running ``tftrace.tracer.attach``)
    and whether its config runs py-spy; exits when there is none."""
    for pid in children_of(os.getpid()):
        try:
            args = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
        except OSError:
            continue
        if b"tftrace.tracer.attach" not in args:
            continue
        try:  # python -m tftrace.tracer.attach CONFIG
            config = json.loads(Path(os.fsdecode(args[-1])).read_text())
        except (OSError, ValueError):
            config = {}
        return pid, bool(config.get("pyspy", True))
    sys.exit(
        "error: --toggle helper: no tftrace.tracer.attach helper among this process's children"
    )


def toggle_targets(toggle: str) -> list[tuple[str, int]]:
    """What the "off" chunks stop: (name, pid). py-spy is looked for only now, after the
    warm-up, and waited for a while when the recording's options leave it on."""
    if toggle == "none":
        return []
    if toggle == "helper":
        name, (parent, wants_pyspy) = "helper", attach_helper()
    else:
        name, (parent, args) = "recorder", parent_recorder()
        wants_pyspy = b"--no-pyspy" not in args
    deadline = time.monotonic() + (PYSPY_WAIT_S if wants_pyspy else 0)
    while True:
        pyspy = children_named(parent, "py-spy")
        if pyspy or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return [(name, parent), *(("py-spy", pid) for pid in pyspy)]


def set_running(pids: list[int], running: bool) -> None:
    for pid in pids:
        # A source that ended on its own is no error here: the run manifest tells.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT if running else signal.SIGSTOP)


def run_paired(step: Callable[[int], Any], args: argparse.Namespace) -> dict[str, Any]:
    targets = toggle_targets(args.toggle)
    pids = [pid for _, pid in targets]
    chunks: dict[bool, dict[str, list[Any]]] = {
        state: {"seconds": [], "nivcsw": [], "cpu_seconds": []} for state in (True, False)
    }
    stopped = 0.0
    try:
        for index in range(2 * args.paired):
            on = chunk_is_on(index)
            set_running(pids, on)
            t_state = time.perf_counter()
            run_steps(step, args.settle_steps)
            seconds, nivcsw, cpu = timed_chunk(step, args.chunk_steps)
            chunks[on]["seconds"].append(round(seconds, 6))
            chunks[on]["nivcsw"].append(nivcsw)
            chunks[on]["cpu_seconds"].append(round(cpu, 6))
            if pids and not on:
                stopped += time.perf_counter() - t_state
    finally:
        set_running(pids, True)  # never leave the recorder (or the helper) stopped
    return {
        "toggled": [name for name, _ in targets],
        "on": chunks[True],
        "off": chunks[False],
        "stopped_seconds": round(stopped, 6),
    }


def recording(args: argparse.Namespace) -> contextlib.AbstractContextManager[Any]:
    """``tftrace.profile`` around the timed part with ``--in-code``; nothing otherwise."""
    if args.in_code is None:
        return contextlib.nullcontext()
    import tftrace

    return tftrace.profile(args.in_code, tf_profiler=False, pyspy=args.in_code_pyspy)


def main() -> None:
    args = parse_args()
    step = make_step(args)
    run_steps(step, args.warmup)
    if args.paired:
        # run_paired continues what it stopped before it returns: the block ends with the
        # helper running.
        with recording(args):
            paired = run_paired(step, args)
        total = sum(paired["on"]["seconds"]) + sum(paired["off"]["seconds"])
        print(f"WORKLOAD_SECONDS={total:.6f}")
        print(f"PAIRED_CHUNKS={json.dumps(paired)}", flush=True)
        return
    with recording(args):
        t0 = time.perf_counter()
        run_steps(step, args.steps)
        elapsed = time.perf_counter() - t0
    print(f"WORKLOAD_SECONDS={elapsed:.6f}", flush=True)


if __name__ == "__main__":
    main()
