"""TensorFlow's profiler client, in a process of its own, for ``tftrace capture``:
``python -m tftrace.tracer.capture_trace RESULT LOGDIR DURATION_MS ADDRESSES``.

One call of ``tf.profiler.experimental.client.trace`` traces every host at once; each
host's trace lands as ``LOGDIR/plugins/profile/<session>/<host>_<port>.xplane.pb``, a host
that does not answer has none (TF logs it and keeps the others). TF writes its own lines to
the process's stdout and stderr, which the capture keeps out of the user's terminal: hence
this process. RESULT gets ``{"begin", "end", "error"}``: this machine's clocks right before
and after the call (``clock_anchor``), and the call's error in one line, or null.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .environment import clock_anchor
from .rundir import write_json_atomic


def main(result: str, logdir: str, duration_ms: str, addresses: str) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # TF's errors name the lost hosts
    begin = clock_anchor()
    error = None
    try:
        import tensorflow as tf

        begin = clock_anchor()
        tf.profiler.experimental.client.trace(addresses, logdir, int(duration_ms))
    except Exception as e:  # reported by the capture, in one line
        error = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    write_json_atomic(Path(result), {"begin": begin, "end": clock_anchor(), "error": error})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
