"""A server whose pace alternates by construction: ``--clients K`` threads serve requests for
``--seconds S``, each request one call of a small tf.function then ``--fast-us`` or
``--slow-us`` of Python work (CPU, holding the interpreter lock), the two alternating every
``--phase-s`` seconds. A slow request also sleeps ``--slow-sleeps`` times (50 us each) amid
its Python work, handing the lock over: so the requests run at two paces, the slow one
dearer in the request threads' CPU and put on a CPU more often, by construction.

Known answers, by the workload's own accounting (``--own FILE``, JSON): per pace, the
requests it made, the seconds it ran, and its request threads' CPU (``time.thread_time``)
and times put on a CPU (``/proc/thread-self/schedstat``'s third field, the kernel's count)
over those requests (each request's from its start to the next one's), each request
counted in the phase it started in.
"""

import argparse
import json
import threading
import time

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--clients", type=int, default=4)
parser.add_argument("--seconds", type=float, default=3.0)
parser.add_argument("--phase-s", type=float, default=0.3)
parser.add_argument("--fast-us", type=float, default=200.0)
parser.add_argument("--slow-us", type=float, default=1200.0)
parser.add_argument("--slow-sleeps", type=int, default=3)
parser.add_argument("--own", help="write the workload's own accounting here (JSON)")
args = parser.parse_args()

x = tf.random.normal((32, 32))


@tf.function
def serve(a: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.matmul(a, a))


serve(x)  # the warm-up: the first call traces


def switches() -> int:
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[2])


def python_work(us: float, sleeps: int = 0) -> None:
    """``us`` of CPU in Python, in ``sleeps + 1`` parts with a 50 us sleep between them (the
    thread blocks, and hands the interpreter lock over)."""
    for part in range(sleeps + 1):
        if part:
            time.sleep(50e-6)
        end = time.thread_time() + us / 1e6 / (sleeps + 1)
        while time.thread_time() < end:
            pass


PACES = ("fast", "slow")
own = {pace: {"requests": 0, "cpu_s": 0.0, "switches": 0} for pace in PACES}
lock = threading.Lock()
t0 = time.monotonic()


def pace_at(t: float) -> str:
    return PACES[int((t - t0) / args.phase_s) % 2]


def client() -> None:
    # each request's counters run from its start to the next one's, so that together they
    # hold all the thread's time: the loop's own and the reads of the counters too
    mine = {pace: [0, 0.0, 0] for pace in PACES}
    cpu, runs = time.thread_time(), switches()
    while (now := time.monotonic()) < t0 + args.seconds:
        pace = pace_at(now)
        serve(x).numpy()
        if pace == "fast":
            python_work(args.fast_us)
        else:
            python_work(args.slow_us, args.slow_sleeps)
        now_cpu, now_runs = time.thread_time(), switches()
        mine[pace][0] += 1
        mine[pace][1] += now_cpu - cpu
        mine[pace][2] += now_runs - runs
        cpu, runs = now_cpu, now_runs
    with lock:
        for pace, (n, cpu, runs) in mine.items():
            own[pace]["requests"] += n
            own[pace]["cpu_s"] += cpu
            own[pace]["switches"] += runs


threads = [threading.Thread(target=client, name=f"client_{i}") for i in range(args.clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
phases = int(args.seconds / args.phase_s)
for pace in PACES:
    own[pace]["seconds"] = args.phase_s * (phases // 2 + (phases % 2 if pace == "fast" else 0))
if args.own:
    with open(args.own, "w") as f:
        json.dump(own, f)
print(json.dumps(own), flush=True)
