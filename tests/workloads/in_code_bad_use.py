"""Each kind of bad use of tftrace.profile, one after another: each must print one line and
let the code go on. ``in_code_bad_use.py BASE`` (runs go under BASE)."""

import sys
from pathlib import Path

import tensorflow as tf

import tftrace

base = Path(sys.argv[1])
x = tf.random.normal((100, 100))

# 1. nested (the second opens inside the first): the inner block runs unrecorded
with tftrace.profile(base / "outer") as outer, tftrace.profile(base / "inner") as inner:
    tf.matmul(x, x)
print(f"NESTED outer={outer.manifest['status']} inner={inner.path}", flush=True)

# 2. a directory that cannot be created (under a file)
(base / "a_file").write_text("")
with tftrace.profile(base / "a_file" / "run", pyspy=False) as unwritable:
    tf.matmul(x, x)
print(f"UNWRITABLE path={unwritable.path}", flush=True)

# 3. the TF profiler already running (TF allows one): recorded without it
tf.profiler.experimental.start(str(base / "theirs"))
with tftrace.profile(base / "busy", pyspy=False) as busy:
    tf.matmul(x, x)
tf.profiler.experimental.stop()
print(f"BUSY tf_profiler={busy.manifest['sources']['tf_profiler']['state']}", flush=True)

# 4. the user's exception goes through, and the run is kept
try:
    with tftrace.profile(base / "raised", pyspy=False) as raised:
        raise ValueError("the user's own error")
except ValueError as e:
    print(f"RAISED {e} status={raised.manifest['workload']['exception']['type']}", flush=True)
