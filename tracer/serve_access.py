"""Who may ask the data endpoint of ``tftrace.serve`` (``serve_endpoint.py``), and the HTTP
server that answers.

The endpoint binds 127.0.0.1 unless ``tftrace.serve(port, host=...)`` names another address.
Every request is checked before it is answered, 403 otherwise:

- its ``Host`` header must name this endpoint (with the data port, or no port): ``localhost``,
  ``127.0.0.1``, ``[::1]`` or the bound host; bound beyond loopback, also this machine's names
  (``socket.gethostname()``, its FQDN, this task's address in TF_CONFIG) or any IP address.
  A web page whose name an attacker points at this machine (DNS rebinding) sends its own name.
- bound beyond loopback, it must carry the token: ``Authorization: Bearer TOKEN`` (as
  ``tftrace capture`` sends it) or ``?token=TOKEN``. The token is ``TFTRACE_TOKEN`` of the
  served process's environment (one for every worker of a job; at least ``MIN_TOKEN_CHARS``
  characters), else a new random one (``secrets.token_urlsafe``) printed once on stderr.

Each connection is answered in a daemon thread of its own, at most ``MAX_CLIENTS`` at once
(more are closed unanswered); its client has ``SOCKET_TIMEOUT_S`` to send the request, and
each later read or write waits as long at most: a client that sends half a request, or a
request that waits for its window to end, holds only its own thread. A client that goes away
(a reset, a broken pipe, a timeout) prints nothing on the program's stderr; any other failure
of a request prints one line.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import secrets
import socket
import socketserver
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .cluster_task import TaskError, task_of
from .in_process import warn

DEFAULT_HOST = "127.0.0.1"
SOCKET_TIMEOUT_S = 10.0  # each read or write of a connection
MAX_CLIENTS = 32  # connections answered at once
TOKEN_ENV = "TFTRACE_TOKEN"
MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def split_host(header: str) -> tuple[str, int | None] | None:
    """(name, port or None) of a ``Host`` header: ``h``, ``h:6010``, ``[::1]:6010``;
    the name in lower case without a final dot. None when it is not one."""
    text = header.strip()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text_ = text.partition(":")
        port_text = port_text_ if colon else None
    if port_text is not None and not (port_text.isdigit() and len(port_text) <= 5):
        return None
    name = name.lower().rstrip(".")
    if not name or any(c in name for c in " /\\@"):
        return None
    return name, int(port_text) if port_text is not None else None


@dataclass(frozen=True)
class Access:
    """What a request must show: a ``Host`` of ``names`` (or an IP address: any when ``wide``,
    a loopback one otherwise) on ``port``, and ``token`` where there is one."""

    names: frozenset[str]
    port: int
    wide: bool  # bound beyond loopback
    token: str | None = field(default=None, repr=False)

    def refusal(self, host: str | None, token: str | None) -> str | None:
        """Why a request with this ``Host`` header and token is refused; None: it is not."""
        if not self._host_allowed(host):
            shown = (host or "")[:80]
            return f"the Host header {shown!r} does not name this endpoint"
        if self.token is None:
            return None
        if not token:
            return (
                "this endpoint needs the token tftrace.serve printed: tftrace capture "
                f"grpc://HOST:PORT?token=TOKEN, or {TOKEN_ENV}=TOKEN"
            )
        given = token.encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(given, self.token.encode("utf-8", "surrogateescape")):
            return "wrong token"
        return None

    def _host_allowed(self, header: str | None) -> bool:
        parts = split_host(header) if header else None
        if parts is None:
            return False
        name, port = parts
        if port is not None and port != self.port:
            return False
        if name in self.names:
            return True
        ip = _ip(name)
        return ip is not None and (self.wide or ip.is_loopback)


def access_for(bound: str, host: str, port: int, env: Mapping[str, str]) -> Access:
    """The ``Access`` of an endpoint bound to address ``bound`` (as the socket says) on
    ``port``, asked for as ``host``; a token from ``env`` or a new one when bound beyond
    loopback."""
    ip = _ip(bound)
    wide = ip is None or not ip.is_loopback
    names = set(LOOPBACK_NAMES)
    names.update(n.lower().strip("[]").rstrip(".") for n in (host, bound) if n)
    if not wide:
        return Access(frozenset(names), port, False)
    names.update(machine_names(env))
    return Access(frozenset(n for n in names if n), port, True, endpoint_token(env))


def machine_names(env: Mapping[str, str]) -> set[str]:
    """This machine's names a capture may use: its hostname, its FQDN, and the host of this
    task's address in TF_CONFIG (a job's DNS name, as a cluster spec gives it)."""
    names = {socket.gethostname().lower()}
    with contextlib.suppress(OSError):
        names.add(socket.getfqdn().lower().rstrip("."))
    try:
        task = task_of(env)
    except TaskError:
        task = None
    if task is not None:
        members = task["cluster"].get(task["type"]) or []
        if 0 <= task["index"] < len(members):
            address = split_host(members[task["index"]])
            if address is not None:
                names.add(address[0])
    return names


def endpoint_token(env: Mapping[str, str]) -> str:
    """``TFTRACE_TOKEN`` of ``env`` when it is long enough, else a new random token."""
    given = env.get(TOKEN_ENV)
    if given and len(given) >= MIN_TOKEN_CHARS:
        return given
    if given:
        warn(
            f"tftrace.serve: {TOKEN_ENV} is shorter than {MIN_TOKEN_CHARS} characters; "
            "a random token is used instead"
        )
    return secrets.token_urlsafe(32)


class GuardedHandler(BaseHTTPRequestHandler):
    """A handler whose client has ``SOCKET_TIMEOUT_S`` to send its request line and headers
    (the connection is cut after that, however slowly it trickles in), and which writes
    nothing on the program's stderr."""

    timeout = SOCKET_TIMEOUT_S  # each read and write of the connection
    _deadline: threading.Timer | None = None

    def setup(self) -> None:
        super().setup()
        self._deadline = threading.Timer(SOCKET_TIMEOUT_S, self._cut)
        self._deadline.daemon = True
        self._deadline.start()

    def _cut(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once

    def request_read(self) -> None:
        """The request's headers have arrived: the deadline no longer holds."""
        if self._deadline is not None:
            self._deadline.cancel()

    def finish(self) -> None:
        self.request_read()
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the program's stderr is the user's


def bind(host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> EndpointServer:
    """A server listening on ``host`` (a name or an address; ``::`` is IPv6 and IPv4 where
    the system has both) and ``port``; OSError when it cannot."""
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host or "0.0.0.0", port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as e:
        raise OSError(f"cannot bind {host!r}: {e.strerror or e}") from None
    return EndpointServer(address, handler, family)


class EndpointServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` that answers ``MAX_CLIENTS`` connections at once, in daemon
    threads, and keeps a client's failures off the program's stderr."""

    daemon_threads = True
    block_on_close = False

    def __init__(
        self, address: Any, handler: type[BaseHTTPRequestHandler], family: socket.AddressFamily
    ) -> None:
        self.address_family = family
        self.slots = threading.BoundedSemaphore(MAX_CLIENTS)
        super().__init__(address, handler)

    def server_bind(self) -> None:
        ip = _ip(str(self.server_address[0]))
        if self.address_family == socket.AF_INET6 and ip is not None and ip.is_unspecified:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        socketserver.TCPServer.server_bind(self)  # HTTPServer's would ask DNS for the name
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # busy: the client may ask again
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, OSError):  # the client reset, went away or timed out
            return
        warn(f"tftrace.serve: a request to the data endpoint failed ({type(error).__name__})")
