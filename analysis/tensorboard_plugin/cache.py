"""Each run's tab data, computed once and kept beside the run.

``RUN/tftrace/plugin.json`` holds the dashboard JSON with the run's fingerprint
(``runs.fingerprint``: the recorded files' sizes and times, the tftrace version); the findings
carry what the run's last ``tftrace analyze --verify`` found (``verify.last_verification``).
It is used while the fingerprint holds and computed again when the run, its verification or
tftrace changed.
``tftrace tensorboard RUN`` writes it with the options it was given (``--window``, ``--cpus``);
the plugin, finding none, analyses with the defaults (the steady window). A run directory that
cannot be written keeps its data in memory only. A run whose analysis fails is remembered as
failed (with the message) until its files change, so a broken run costs one attempt.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tftrace.analysis.tensorboard_plugin.runs import fingerprint
from tftrace.errors import TftraceError
from tftrace.tracer.rundir import read_json_or_none
from tftrace.tracer.safe_files import atomic_output, safe_dir

CACHE_FILE = "plugin.json"
logger = logging.getLogger(__name__)


class RunFailed(Exception):
    """A run whose tab data could not be computed; the message says why in one line."""


def cache_path(run_path: Path) -> Path:
    """Where a run's tab data is cached: ``RUN/tftrace/plugin.json``."""
    from tftrace.analysis.render.tensorboard import summaries_dir  # pandas: at first use

    return summaries_dir(run_path) / CACHE_FILE


def read_cached(run_path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The cached data when its fingerprint is ``key``; None when absent, stale or unreadable."""
    stored = read_json_or_none(cache_path(run_path))  # a regular file, not too deep
    if stored is None or stored.get("key") != key:
        return None
    data = stored.get("dashboard")
    return data if isinstance(data, dict) else None


def write_cached(run_path: Path, key: dict[str, Any], data: dict[str, Any]) -> bool:
    """Store ``data`` under ``key`` (atomically: a reader sees the old file or the new one);
    False when the run directory cannot be written."""
    target = cache_path(run_path)
    try:
        safe_dir(target.parent)  # RUN/tftrace: not through a link
        with atomic_output(target, "w") as f:
            json.dump({"key": key, "dashboard": data}, f, allow_nan=False)
    except OSError as e:
        logger.info("tftrace: cannot cache %s (%s)", target, e)
        return False
    return True


def store(analysis: Any) -> Path | None:
    """Compute and cache the tab data of an Analysis now (what ``tftrace tensorboard`` does, so
    that the tab opens at once, over the window it was asked for); the file, or None."""
    path = Path(analysis.run.path)
    key = fingerprint(path)
    return cache_path(path) if write_cached(path, key, tab_data(analysis)) else None


def compute(run_path: Path) -> dict[str, Any]:
    """The tab data of the run at ``run_path``, analysed as ``tftrace analyze`` does."""
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.model.run import load

    return tab_data(analyze(load(run_path)))


def tab_data(analysis: Any) -> dict[str, Any]:
    """The dashboard of an Analysis, its findings as the run's last verification found them."""
    from tftrace.analysis.sweep.verify import last_verification
    from tftrace.analysis.tensorboard_plugin.dashboard import dashboard

    return dashboard(last_verification(analysis.run, analysis))


class DashboardCache:
    """Tab data per run, in memory and on disk, each run computed by one request at a time
    (TensorBoard serves requests on many threads; the page asks again while it waits)."""

    def __init__(self, compute: Callable[[Path], dict[str, Any]] = compute) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._run_locks: dict[Path, threading.Lock] = {}
        self._memory: dict[Path, tuple[dict[str, Any], dict[str, Any] | str]] = {}

    def get(self, run_path: Path) -> dict[str, Any]:
        """The run's data; raises ``RunFailed`` (with the reason) when it cannot be computed."""
        with self._lock:
            run_lock = self._run_locks.setdefault(run_path, threading.Lock())
        with run_lock:
            key = fingerprint(run_path)
            known = self._memory.get(run_path)
            if known is not None and known[0] == key:
                return _result(known[1])
            result: dict[str, Any] | str | None = read_cached(run_path, key)
            if result is None:
                result = self._attempt(run_path)
                if isinstance(result, dict):
                    write_cached(run_path, key, result)
            self._memory[run_path] = (key, result)
            return _result(result)

    def _attempt(self, run_path: Path) -> dict[str, Any] | str:
        try:
            return self._compute(run_path)
        except TftraceError as e:
            return str(e)
        except Exception as e:  # a bug on a strange run must not take the server down
            logger.exception("tftrace: analysing %s failed", run_path)
            return f"analysis failed: {type(e).__name__}: {e}"


def _result(result: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(result, str):
        raise RunFailed(result)
    return result
