"""The TensorBoard plugin behind the Thread pools tab: its routes, and whether it has runs.

Routes (under ``/data/plugin/tftrace``):

- ``/index.js`` and ``/static/<file>``: the page, ES modules and a style sheet shipped in the
  package (``static/``); TensorBoard loads ``index.js`` in the tab's iframe and calls its
  ``render()``.
- ``/runs``: the tftrace runs under the log directory (``runs.find_runs``).
- ``/run?run=NAME``: one run's tab data (``dashboard.dashboard``, cached by ``cache.py``).
- ``/diff?a=NAME&b=NAME``: ``tftrace.diff`` of two runs, B against A (``RunDiff.to_json``).

Every answer is JSON; a run that is unknown or cannot be analysed answers
``{"run": NAME, "error": "..."}`` (404 or 500) and the server goes on.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import re
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from tftrace.analysis.tensorboard_plugin import PLUGIN_NAME, TAB_NAME
from tftrace.analysis.tensorboard_plugin.cache import DashboardCache, RunFailed
from tftrace.analysis.tensorboard_plugin.runs import RunIndex, RunInfo, fingerprint
from tftrace.errors import TftraceError

STATIC = "static"
TYPES = {".js": "text/javascript", ".css": "text/css"}
STATIC_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # what static/ holds: bare, plain names
logger = logging.getLogger(__name__)


class ThreadPoolsPlugin(base_plugin.TBPlugin):
    """tftrace's Thread pools tab: for every tftrace run under the log directory, the core-use
    headline, findings, pools, concurrency, queue delay, steps and threads, and two runs
    compared (``tftrace.diff``)."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        logdir = getattr(context, "logdir", None) or getattr(context.flags, "logdir", None)
        self.index = RunIndex(Path(logdir).expanduser() if logdir else None)
        self.cache = DashboardCache()
        self._diffs: dict[str, dict[str, Any]] = {}
        self._diff_lock = threading.Lock()

    def get_plugin_apps(self) -> dict[str, Any]:
        handlers = {
            "/index.js": self._serve_index,
            "/static/*": self._serve_static,
            "/runs": self._serve_runs,
            "/run": self._serve_run,
            "/diff": self._serve_diff,
        }
        return {route: wrappers.Request.application(h) for route, h in handlers.items()}

    def is_active(self) -> bool:
        return bool(self.index.runs())

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME)

    # --- routes -----------------------------------------------------------------------------

    def _serve_index(self, request: wrappers.Request) -> wrappers.Response:
        return _static(request, "index.js")

    def _serve_static(self, request: wrappers.Request) -> wrappers.Response:
        return _static(request, request.path.rpartition("/")[2])

    def _serve_runs(self, request: wrappers.Request) -> wrappers.Response:
        runs = [r.to_json() for r in self.index.runs().values()]
        logdir = str(self.index.logdir) if self.index.logdir else None
        return _json(request, {"logdir": logdir, "runs": runs})

    def _serve_run(self, request: wrappers.Request) -> wrappers.Response:
        name = request.args.get("run", "")
        run = self.index.runs().get(name)
        if run is None:
            return _json(request, {"run": name, "error": f"no tftrace run {name!r}"}, 404)
        try:
            data = self.cache.get(run.path)
        except RunFailed as e:
            return _json(request, {"run": name, "error": str(e)}, 500)
        return _json(request, {**data, "name": name, "label": run.label})

    def _serve_diff(self, request: wrappers.Request) -> wrappers.Response:
        runs = self.index.runs()
        a_name, b_name = request.args.get("a", ""), request.args.get("b", "")
        a, b = runs.get(a_name), runs.get(b_name)
        if a is None or b is None:
            name = b_name if a is not None else a_name
            return _json(request, {"run": name, "error": f"no tftrace run {name!r}"}, 404)
        return _json(request, {"a_name": a.name, "b_name": b.name, **self._diff(a, b)})

    def _diff(self, a: RunInfo, b: RunInfo) -> dict[str, Any]:
        """``tftrace.diff`` of two runs as JSON (or the reason it cannot be), kept in memory
        while neither run changes."""
        key = json.dumps([fingerprint(a.path), fingerprint(b.path), str(a.path), str(b.path)])
        with self._diff_lock:
            if key not in self._diffs:
                self._diffs[key] = compare(a.path, b.path)
            return self._diffs[key]


def compare(a: Path, b: Path) -> dict[str, Any]:
    """``tftrace.diff(load(a), load(b)).to_json()``, or ``{"error": ...}`` saying why not."""
    from tftrace.analysis.diff import diff
    from tftrace.analysis.model.run import load
    from tftrace.analysis.tensorboard_plugin.dashboard import clean

    try:
        return dict(clean(diff(load(a), load(b)).to_json()))
    except TftraceError as e:
        return {"error": str(e)}
    except Exception as e:  # a bug on a strange pair must not take the server down
        logger.exception("tftrace: comparing %s and %s failed", a, b)
        return {"error": f"comparison failed: {type(e).__name__}: {e}"}


def _json(request: wrappers.Request, data: dict[str, Any], code: int = 200) -> Any:
    body = json.dumps(data, allow_nan=False, ensure_ascii=False)
    return http_util.Respond(request, body, "application/json; charset=utf-8", code=code)


def _static(request: wrappers.Request, name: str) -> Any:
    """A file of ``static/`` by its bare name (nothing else can be named: no folders)."""
    folder = resources.files(__package__).joinpath(STATIC)
    suffix = Path(name).suffix if STATIC_NAME.fullmatch(name) else ""
    if name.startswith(".") or suffix not in TYPES:  # a NUL byte, a folder, a dot file: none
        return http_util.Respond(request, "not found", "text/plain", code=404)
    try:
        body = folder.joinpath(name).read_bytes()
    except (OSError, ValueError):
        return http_util.Respond(request, "not found", "text/plain", code=404)
    kind = TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    return http_util.Respond(request, body, kind)
