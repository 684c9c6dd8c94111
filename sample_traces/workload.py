"""The workload every sample trace in this folder was recorded from (see README.md).

About 1-2 s of work that puts something on each kind of CPU thread, while keeping the
trace small:

* a tf.function with two independent matmul chains, run a few times: both inter-op
  ``tf_Compute`` threads get ops;
* eager 500x500 matmuls: intra-op (Eigen) work;
* a tf.data pipeline with ``map(..., num_parallel_calls=2)``: tf.data threads;
* a numpy matmul: OpenBLAS starts its own threads;
* a plain ``threading.Thread(name="side-worker")`` doing a little TF and Python work.

Record it with the pool sizes set by env var (intra=2, inter=2):

    TF_NUM_INTRAOP_THREADS=2 TF_NUM_INTEROP_THREADS=2 TF_CPP_MIN_LOG_LEVEL=2 \\
        tftrace record -o sample_traces/tf-X.Y sample_traces/workload.py
"""

import threading

import numpy as np
import tensorflow as tf

N = 300  # tf.function chain size
EAGER_N = 500


@tf.function
def two_chains(a, b):
    x = a
    y = b
    for _ in range(3):
        x = tf.matmul(x, a)
        y = tf.matmul(y, b)
    return tf.reduce_sum(x) + tf.reduce_sum(y)


def side_work(out):
    s = 0
    for i in range(200_000):
        s += i * i
    m = tf.random.uniform((200, 200))
    out["side"] = float(tf.reduce_sum(tf.matmul(m, m))) + s


def main():
    rng = tf.random.Generator.from_seed(0)
    a = rng.normal((N, N)) * 0.01
    b = rng.normal((N, N)) * 0.01

    for _ in range(4):
        two_chains(a, b).numpy()

    m = rng.normal((EAGER_N, EAGER_N)) * 0.01
    for _ in range(4):
        m2 = tf.matmul(m, m)
    m2.numpy()

    ds = (
        tf.data.Dataset.range(32)
        .map(
            lambda i: tf.reduce_sum(tf.fill((64, 64), tf.cast(i, tf.float32))), num_parallel_calls=2
        )
        .batch(8)
    )
    total = sum(float(tf.reduce_sum(x)) for x in ds)

    npa = np.random.default_rng(0).standard_normal((400, 400))
    npm = npa @ npa

    out = {}
    side = threading.Thread(target=side_work, args=(out,), name="side-worker")
    side.start()
    side.join()

    print(f"done: data={total:.0f} numpy={npm.trace():.3f} side={out['side']:.3f}")


if __name__ == "__main__":
    main()
