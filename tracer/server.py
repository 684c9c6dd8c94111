"""``Server``: what ``tftrace.serve`` started in this process. Its own module: ``serve`` starts
it and ``serve_endpoint`` answers captures from it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .child.thread_identity import IdentityRecorder
from .environment import clock_anchor
from .serve_access import DEFAULT_HOST


@dataclass
class Server:
    """What ``tftrace.serve`` started in this process, and where a capture reaches it.

    ``port``: TensorFlow's profiler server (``tftrace capture grpc://HOST:PORT``);
    ``data_port``: tftrace's endpoint for the rest of the run data, on ``host``; ``task``: the
    TF_CONFIG task (``worker-0``) that names this host's directory in a capture; ``sampler``
    and ``identity``: ``"running"``, or why not (a capture still gets the trace); ``token``:
    what a capture must give the endpoint (``?token=``), None on loopback.

    Example::

        server = tftrace.serve(6009)
        print(server.port, server.data_port, server.sampler)  # 6009 6010 running
    """

    port: int
    data_port: int
    task: str | None
    sample_hz: float
    keep_s: float
    host: str = DEFAULT_HOST
    token: str | None = field(default=None, repr=False)
    started: dict[str, int] = field(default_factory=clock_anchor)  # clock_anchor() at start
    sampler: str = "not started"
    identity: str = "not started"
    buffer: Path | None = None  # the helper's directory: os_threads/ of the last keep_s
    recorder: IdentityRecorder | None = field(default=None, repr=False)
    helper: subprocess.Popen[str] | None = field(default=None, repr=False)
    http: Any = field(default=None, repr=False)

    def sampler_alive(self) -> bool:
        return self.helper is not None and self.helper.poll() is None
