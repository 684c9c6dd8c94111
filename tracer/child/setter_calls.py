"""Record the workload's own tf.config.threading setter calls.

The pools are process-global and sized once; a setter called after the runtime
started raises (or, in older TF, is silently ignored). Recording each call with
its outcome lets the analysis say "your script asked for X but ran with Y". In a sweep the
sweep owns the pool sizes: the calls are recorded but not applied (``apply=False``), so they
neither override the sweep's setting nor raise.
"""

from __future__ import annotations

import functools
import time
from typing import Any

SETTERS = ("set_intra_op_parallelism_threads", "set_inter_op_parallelism_threads")


def install(calls: list[dict[str, Any]], apply: bool = True) -> None:
    """Wrap the public setters; each call is passed through unchanged, or with ``apply=False``
    only recorded (it returns None, as the setters do)."""
    import tensorflow as tf

    module = tf.config.threading
    for name in SETTERS:
        original = getattr(module, name, None)
        if original is None or getattr(original, "__tftrace_wrapped__", False):
            continue
        setattr(module, name, _wrap(name, original, calls, apply))


def _wrap(name: str, original: Any, calls: list[dict[str, Any]], apply: bool) -> Any:
    @functools.wraps(original)
    def wrapper(num_threads: Any) -> Any:
        entry: dict[str, Any] = {
            "setter": name,
            "value": num_threads,
            "monotonic_ns": time.monotonic_ns(),
            "applied": apply,
        }
        calls.append(entry)
        if not apply:
            entry["error"] = None
            return None
        try:
            result = original(num_threads)
        except BaseException as e:
            entry["error"] = f"{type(e).__name__}: {e}"
            raise
        entry["error"] = None
        return result

    wrapper.__tftrace_wrapped__ = True  # type: ignore[attr-defined]
    return wrapper


def configured_pool_sizes() -> dict[str, int] | None:
    """The settings TF holds now (0 = default), or None if TF was never imported."""
    import sys

    if "tensorflow" not in sys.modules:
        return None
    import tensorflow as tf

    return {
        "inter_op": int(tf.config.threading.get_inter_op_parallelism_threads()),
        "intra_op": int(tf.config.threading.get_intra_op_parallelism_threads()),
    }
