"""A data-parallel job on TensorFlow's own distributed runtime, for tftrace's multi-host
known answers: MultiWorkerMirroredStrategy, wired by TF_CONFIG (one process per worker).

Each step (a tf.function) computes a gradient of a 512 x 512 product on each worker and
all-reduces it across the workers. ``--delay-task N --delay-ms D`` makes worker N a straggler
by construction: it sleeps (or, with ``--burn``, spins on the CPU) D ms before each step, so
the other workers wait about D ms in the all-reduce of every step. ``--die-after K``: worker
``--delay-task`` exits abruptly (code 3) after K steps; the others' collectives then fail at
``--timeout-s``.
"""

import argparse
import json
import os
import time

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--delay-task", type=int, default=-1)
parser.add_argument("--delay-ms", type=float, default=0.0)
parser.add_argument("--burn", action="store_true")
parser.add_argument("--die-after", type=int, default=-1)
parser.add_argument("--timeout-s", type=float, default=30.0, help="a collective's time limit")
args = parser.parse_args()

task = json.loads(os.environ["TF_CONFIG"])["task"]
me = int(task["index"])
# A worker whose peer died would wait in its collective forever: the time limit ends it.
options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=args.timeout_s)
strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
with strategy.scope():
    w = tf.Variable(tf.random.normal((512, 512)))
x = tf.random.normal((512, 512))


@tf.function
def train_step(x: tf.Tensor) -> tf.Tensor:
    def step_fn(x: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, w))
        grad = tape.gradient(loss, w)
        grad = tf.distribute.get_replica_context().all_reduce("sum", grad)
        w.assign_sub(1e-6 * grad)
        return loss

    return strategy.reduce("sum", strategy.run(step_fn, args=(x,)), axis=None)


def delay() -> None:
    if args.burn:
        end = time.perf_counter() + args.delay_ms / 1e3
        while time.perf_counter() < end:
            pass
    else:
        time.sleep(args.delay_ms / 1e3)


for step in range(args.steps + 1):  # the first call traces the function: the warm-up step
    if me == args.delay_task:
        if step == args.die_after:
            os._exit(3)
        if args.delay_ms > 0:
            delay()
    train_step(x).numpy()
# Worker 0 hosts the job's coordination service: if it exits while another worker is still
# shutting down, that worker may abort on the lost coordinator. A last collective lines the
# workers up, then worker 0 leaves last.
strategy.reduce("sum", strategy.run(lambda: tf.constant(1.0)), axis=None).numpy()
if me == 0:
    time.sleep(1.0)
print(f"worker {me} done")
