"""``tftrace.serve(port)``: make a running program capturable, on demand, by ``tftrace capture``.

Three things start and run until the program ends: TensorFlow's profiler server on ``port``
(the trace, asked for over gRPC), the thread-identity watcher (as ``tftrace.profile`` runs it
in the program), and the OS sampler in a helper process (``serve_helper.py``) that keeps the
last few minutes of samples. A small HTTP endpoint on ``data_port`` (``serve_endpoint.py``)
hands a capture the rest of a run directory for any recent window: the manifest's facts of
this process, its OS samples and thread identity. It listens on 127.0.0.1 unless ``host``
says otherwise; beyond loopback it asks for a token, printed once on stderr
(``serve_access.py``). Nothing is written until a capture asks. Bad use never stops the
program: one line on stderr says what does not run.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

from .child.thread_identity import IdentityRecorder, IdentityWatcher, hook_python_threads
from .cluster_task import TaskError, task_of
from .helper_configs import ServeHelperConfig
from .helper_process import answer, end_helper, launch_helper
from .in_process import warn
from .options import DEFAULT_SAMPLE_HZ
from .sample_buffer import DEFAULT_KEEP_S
from .serve_access import DEFAULT_HOST, TOKEN_ENV
from .serve_endpoint import start_endpoint
from .server import Server

_lock = threading.Lock()
_served: list[Server] = []  # the one server of this process, once started


def task_name() -> str | None:
    """``worker-0`` for a process whose TF_CONFIG names its task, else None."""
    try:
        task = task_of(os.environ)
    except TaskError:
        return None
    return task["name"] if task is not None else None


def serve(
    port: int,
    *,
    host: str = DEFAULT_HOST,
    data_port: int | None = None,
    sample_hz: float = DEFAULT_SAMPLE_HZ,
    keep_s: float = DEFAULT_KEEP_S,
) -> Server | None:
    """Let ``tftrace capture`` record this running program on demand, from anywhere.

    Starts TensorFlow's profiler server (``tf.profiler.experimental.server.start(port)``),
    tftrace's OS thread sampler and thread-identity watcher (they keep the last ``keep_s``
    seconds), and a small HTTP endpoint on ``data_port`` that gives a capture the run data
    the trace lacks (the process's clocks, pools, thread-pool variables, OS samples; never
    its command line's arguments, working directory or other environment). They run until
    the program ends. Call it once, early (before training); a second call returns the
    server already running.

    TF's profiler server listens on every interface, as TF binds it, with no authentication:
    whoever reaches ``port`` can trace the program (keep it behind a firewall). The endpoint
    listens on ``host``, 127.0.0.1 by default (a capture on this machine). Bound beyond
    loopback (``host="0.0.0.0"``, ``"::"``, an address or name of this machine), it asks
    for a token: ``TFTRACE_TOKEN`` of this process's environment (at least 16 characters;
    one for every worker of a job), else a random one, printed once on stderr. Give it to
    the capture: ``grpc://HOST:PORT?token=TOKEN`` or ``TFTRACE_TOKEN=TOKEN tftrace capture``.

    Args:
        port: the profiler's gRPC port (``tftrace capture grpc://HOST:PORT``).
        host: the address the endpoint listens on (default ``127.0.0.1``; ``0.0.0.0``: every
            IPv4 interface; ``::``: every interface, IPv6 and IPv4).
        data_port: the endpoint's port (default ``port + 1``; a capture expects that unless
            its address says ``grpc://HOST:PORT?data_port=N``).
        sample_hz: OS samples per second (default 100).
        keep_s: how many recent seconds of samples are kept: the longest window a capture
            can ask for (default 300).

    Returns:
        The ``Server`` (its ports, its TF_CONFIG task, what runs), or None when nothing
        could start: a port taken, TensorFlow missing. Errors never stop the program: each
        prints one line on stderr.

    Example::

        import tftrace

        tftrace.serve(6009, host="0.0.0.0")  # in every worker, before training
        model.fit(dataset, epochs=100)
        # elsewhere, while it runs (TFTRACE_TOKEN set in the workers' environment too):
        #   TFTRACE_TOKEN=... tftrace capture grpc://worker0:6009,grpc://worker1:6009 -o job
    """
    with _lock:
        if _served:
            running = _served[0]
            asked = (port, data_port or port + 1, host)
            if asked != (running.port, running.data_port, running.host):
                warn(
                    f"tftrace.serve runs already (port {running.port}, data port "
                    f"{running.data_port} on {running.host}); not starting another"
                )
            return running
        try:
            server = _start(port, data_port, host, sample_hz, keep_s)
        except Exception as e:  # never the training's problem
            warn(f"tftrace.serve did not start ({type(e).__name__}: {e})")
            return None
        if server is not None:
            _served.append(server)
        return server


def _start(port: int, data_port: int | None, host: str, hz: float, keep_s: float) -> Server | None:
    if not all(isinstance(p, int) and 0 < p < 65536 for p in (port, data_port or port + 1)):
        warn(f"tftrace.serve: ports must be integers in 1..65535, not {port!r}, {data_port!r}")
        return None
    if not isinstance(host, str) or not host.strip():
        warn(f"tftrace.serve: host must be an address or a name, not {host!r}")
        return None
    if not (hz > 0 and keep_s > 0):
        warn(f"tftrace.serve: sample_hz and keep_s must be positive, not {hz!r}, {keep_s!r}")
        return None
    server = Server(port, data_port or port + 1, task_name(), float(hz), float(keep_s))
    server.host = host.strip()
    try:
        server.http = start_endpoint(server)
    except OSError as e:
        warn(
            f"tftrace.serve: data port {server.data_port} on {server.host} unavailable "
            f"({e.strerror or e})"
        )
        return None
    problem = _start_profiler(port)
    if problem is not None:
        server.http.shutdown()
        server.http.server_close()
        warn(f"tftrace.serve: the TF profiler server did not start on port {port} ({problem})")
        return None
    _start_identity(server)
    _start_sampler(server)
    _tell_token(server)
    return server


def _tell_token(server: Server) -> None:
    """The one line on stderr that gives a capture the endpoint's token (or says where)."""
    if server.token is None:
        return
    where = f"the tftrace.serve data endpoint on {server.host} port {server.data_port}"
    if os.environ.get(TOKEN_ENV) == server.token:
        line = f"{where} asks for the token of {TOKEN_ENV}"
    else:
        other = f"&data_port={server.data_port}" if server.data_port != server.port + 1 else ""
        line = (
            f"{where} asks for a token: tftrace capture grpc://HOST:{server.port}"
            f"?token={server.token}{other} (or {TOKEN_ENV}={server.token})"
        )
    print(f"tftrace: {line}", file=sys.stderr, flush=True)


def _start_profiler(port: int) -> str | None:
    """None once TF's profiler server listens on ``port``, else why not. TF only logs a
    port it cannot bind, so the port is tried here first."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("", port))
    except OSError as e:
        return f"port taken: {e.strerror or e}"
    try:
        import tensorflow as tf

        tf.profiler.experimental.server.start(port)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def _start_identity(server: Server) -> None:
    try:
        server.recorder = IdentityRecorder()
        hook_python_threads(server.recorder)
        IdentityWatcher(server.recorder).start()  # daemon: until the program ends
        server.identity = "running"
    except Exception as e:
        server.identity = f"{type(e).__name__}: {e}"
        warn(f"tftrace.serve: thread identity is not recorded ({server.identity})")


def _start_sampler(server: Server) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"tftrace-serve-{os.getpid()}-"))
    config = ServeHelperConfig(str(root), os.getpid(), server.sample_hz, server.keep_s)
    try:
        helper = launch_helper(config, root / "config.json")
    except OSError as e:
        shutil.rmtree(root, ignore_errors=True)
        server.sampler = f"helper process: {e}"
    else:
        said = answer(helper)
        if said == "started":
            server.helper, server.buffer, server.sampler = helper, root, "running"
            return
        end_helper(helper)
        shutil.rmtree(root, ignore_errors=True)
        server.sampler = f"helper process: {said or 'no answer'}"
    warn(f"tftrace.serve: the OS sampler is not running ({server.sampler})")
