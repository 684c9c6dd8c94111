"""The data endpoint of a served program (``tftrace.serve``): what a capture gets besides the
trace, over plain HTTP, version 1. It listens on 127.0.0.1 unless ``tftrace.serve(host=...)``
says otherwise; who may ask (the ``Host`` header, the token beyond loopback) and how many at
once: ``serve_access.py``.

``GET /tftrace/v1/info``: JSON ``{"protocol": 1, "pid", "task", "port", "data_port",
"anchor", "started", "sampler", "identity", "sample_hz", "keep_s"}``:
``anchor`` is this process's ``clock_anchor()`` now (a capture takes its wall clock as the
window's start: the window is always on this host's clocks).

``GET /tftrace/v1/run?start_wall_ns=S&end_wall_ns=E``: JSON, the run data of the window
[S, E] (wall ns of this host's clock): ``manifest`` (``manifest.initial`` of this process,
``how`` "capture", its clock's ``start`` at S; its ``env``: ``environment.RECORDED_ENV_VARS``
only; neither the command line's arguments nor the working directory), ``report`` (what the
process says of itself, as ``workload/report.json``), ``identity``
(``thread_identity.json``), ``os_threads`` (the sampler's ``threads.json``, threads seen in
the window), ``os_sampler`` (its source status) and ``anchor`` (the clocks now: the
manifest's ``clock.end``).

``GET /tftrace/v1/samples?start_wall_ns=S&end_wall_ns=E``: the OS samples of the window, one
``os_threads/samples-*.npz`` chunk (``application/octet-stream``).

A window that has not ended waits for it (at most ``WAIT_S``; other clients are answered
meanwhile). Errors are JSON ``{"error": "..."}`` with status 400 (bad query), 403 (a
``Host`` that does not name this endpoint, a missing or wrong token) or 404 (no such path).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from . import manifest
from .child.own_account import describe_tf, new_report
from .environment import clock_anchor
from .in_process import this_program
from .options import RecordOptions, Target
from .rundir import RunDir
from .sample_buffer import FLUSH_EVERY_S, threads_table, wait_for, window
from .serve_access import Access, EndpointServer, GuardedHandler, access_for, bind
from .sources import SourceState, SourceStatus

if TYPE_CHECKING:
    from .server import Server

PROTOCOL = 1
PREFIX = "/tftrace/v1/"
WAIT_S = 3 * FLUSH_EVERY_S + 2.0  # the sampler flushes every second, under SCHED_BATCH


def start_endpoint(server: Server) -> EndpointServer:
    """Listen on ``server.host`` and ``server.data_port``, answering in daemon threads;
    ``server.token`` is set where the endpoint asks for one. OSError when it cannot bind."""
    http = bind(server.host, server.data_port, _Handler)
    bound = str(http.server_address[0])
    access = access_for(bound, server.host, server.data_port, os.environ)
    server.token = access.token
    http.RequestHandlerClass = type("Handler", (_Handler,), {"served": server, "access": access})
    thread = threading.Thread(target=http.serve_forever, name="tftrace-serve", daemon=True)
    thread.start()
    return http


def at(anchor: dict[str, int], wall_ns: int) -> dict[str, int]:
    """The clock anchor of the instant ``wall_ns``, from a reading of the clocks nearby:
    each clock moved by as much as the wall clock did."""
    shift = wall_ns - anchor["wall_ns"]
    return {
        "wall_ns": wall_ns,
        "monotonic_ns": anchor["monotonic_ns"] + shift,
        "boottime_ns": anchor["boottime_ns"] + shift,
        "uncertainty_ns": anchor["uncertainty_ns"],
    }


def info(server: Server) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "pid": os.getpid(),
        "task": server.task,
        "port": server.port,
        "data_port": server.data_port,
        "anchor": clock_anchor(),
        "started": server.started,
        "sampler": server.sampler
        if server.sampler != "running" or server.sampler_alive()
        else "ended",
        "identity": server.identity,
        "sample_hz": server.sample_hz,
        "keep_s": server.keep_s,
    }


def run_data(server: Server, start_wall_ns: int, end_wall_ns: int) -> dict[str, Any]:
    """The run data of [start, end] (wall ns): see the module's docstring."""
    now = clock_anchor()
    lo, hi = at(now, start_wall_ns), at(now, end_wall_ns)
    table = _table(server, lo["monotonic_ns"], hi["monotonic_ns"])
    program = this_program()
    options = RecordOptions(
        target=Target(program.kind, program.value),  # its arguments may hold a secret
        pyspy=False,
        sampler=server.sampler == "running",
        sample_hz=server.sample_hz,
        thread_identity=server.recorder is not None,
    )
    env = dict(os.environ)
    data = manifest.initial(options, RunDir(server.buffer or Path.cwd()), env, lo, how="capture")
    for private in ("argv", "cwd", "run_dir"):  # the capture writes its own run_dir
        data.pop(private, None)
    report = new_report(data["target"])
    report.update(
        start_anchor=server.started,
        code_start_anchor=lo,
        end_anchor=hi,
        exit_code=None,
    )
    describe_tf(report)
    report["finished_anchor"] = clock_anchor()
    return {
        "manifest": data,
        "report": report,
        "identity": _identity(server, table),
        "os_threads": table,
        "os_sampler": _sampler_status(
            server, table, lo["monotonic_ns"], hi["monotonic_ns"]
        ).to_json(),
        "anchor": clock_anchor(),
    }


def _table(server: Server, lo_ns: int, hi_ns: int) -> dict[str, Any] | None:
    if server.buffer is None:
        return None
    wait_for(server.buffer, hi_ns, WAIT_S, server.sampler_alive)
    return threads_table(server.buffer, lo_ns, hi_ns)


def _identity(server: Server, table: dict[str, Any] | None) -> dict[str, Any] | None:
    """``thread_identity.json``: the threads the sampler saw in the window (all of them when
    it did not run)."""
    if server.recorder is None:
        return None
    server.recorder.snapshot()
    identity = server.recorder.to_json()
    if table is not None:
        seen = {t["tid"] for t in table["threads"]}
        identity["threads"] = [t for t in identity["threads"] if t["tid"] in seen]
    return identity


def _sampler_status(
    server: Server, table: dict[str, Any] | None, lo_ns: int, hi_ns: int
) -> SourceStatus:
    """The OS sampler's source status for the window, with what it holds of it."""
    if server.buffer is None or table is None:
        return SourceStatus(SourceState.FAILED, f"tftrace.serve's sampler: {server.sampler}")
    _, facts = window(server.buffer, lo_ns, hi_ns, {t["tid"] for t in table["threads"]})
    details = {
        **facts,
        "threads": len(table["threads"]),
        "hz": server.sample_hz,
        "keep_s": server.keep_s,
        "reader": "the helper process of tftrace.serve",
    }
    if not facts["rows"]:
        why = "no OS sample in the window"
        if not server.sampler_alive():
            why += " (the sampler of tftrace.serve has ended)"
        elif facts["buffer_first_ns"] is not None and facts["buffer_first_ns"] > hi_ns:
            why += f" (tftrace.serve keeps the last {server.keep_s:g} s)"
        return SourceStatus(SourceState.FAILED, why, details)
    return SourceStatus(SourceState.RECORDED, None, details)


def samples(server: Server, start_wall_ns: int, end_wall_ns: int) -> bytes:
    now = clock_anchor()
    lo, hi = at(now, start_wall_ns)["monotonic_ns"], at(now, end_wall_ns)["monotonic_ns"]
    table = _table(server, lo, hi)
    assert server.buffer is not None and table is not None
    body, _ = window(server.buffer, lo, hi, {t["tid"] for t in table["threads"]})
    return body


class _Handler(GuardedHandler):
    served: Server
    access: Access
    server_version = "tftrace-serve"

    def do_GET(self) -> None:
        self.request_read()
        url = urlsplit(self.path)
        given = parse_qs(url.query).get("token", [None])[0]
        auth = self.headers.get("Authorization") or ""
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        refused = self.access.refusal(self.headers.get("Host"), given)
        if refused is not None:
            self._json(403, {"error": refused})
            return
        try:
            if url.path == PREFIX + "info":
                self._json(200, info(self.served))
                return
            if url.path not in (PREFIX + "run", PREFIX + "samples"):
                self._json(404, {"error": f"no such path: {url.path[:200]}"})
                return
            start, end = _window_query(url.query)
            if url.path == PREFIX + "run":
                self._json(200, run_data(self.served, start, end))
            elif self.served.buffer is None:
                self._json(404, {"error": f"no OS samples: {self.served.sampler}"})
            else:
                self._send(200, samples(self.served, start, end), "application/octet-stream")
        except ValueError as e:
            self._json(400, {"error": str(e)})
        except Exception as e:  # the program must not notice; the capture reads why
            self._json(500, {"error": f"{type(e).__name__}: {e}"})

    def _json(self, status: int, data: dict[str, Any]) -> None:
        body = json.dumps(data, default=str).encode()
        self._send(status, body, "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the capture went away


def _window_query(query: str) -> tuple[int, int]:
    """(start, end) wall ns from ``start_wall_ns=S&end_wall_ns=E``; ValueError when bad."""
    values = parse_qs(query)
    try:
        start, end = (int(values[k][0]) for k in ("start_wall_ns", "end_wall_ns"))
    except (KeyError, ValueError):
        raise ValueError("give start_wall_ns and end_wall_ns, integers") from None
    if end < start:
        raise ValueError("end_wall_ns is before start_wall_ns")
    if end > time.time_ns() + int(60e9):
        raise ValueError("the window ends more than a minute from now")
    return start, end
