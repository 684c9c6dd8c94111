"""``tftrace capture grpc://h:p,... --duration S -o DIR``: record running programs that called
``tftrace.serve``, every host at once, into one run directory per host.

1. Each host's data endpoint (``serve_endpoint.py``) is asked for its clocks and TF_CONFIG
   task (``/info``). 2. TensorFlow's profiler client traces all hosts in one call
   (``capture_trace.py``, in a process of its own). 3. Each host that sent a trace is asked
   for the run data of the window (``/run``, ``/samples``), on its own clock: the window
   starts at its ``/info`` reading plus the time this machine waited before the trace, and
   ends no earlier than the trace did. 4. ``DIR/<name>/`` is written as ``tftrace record``
   writes a run directory, ``DIR/capture.json`` says who answered.

An endpoint is not trusted with this machine: its answers are read up to a size
(``INFO_MAX_BYTES``, ``RUN_MAX_BYTES``, ``SAMPLES_MAX_BYTES``), never through a redirect or a
proxy (the token goes to the host named, and nowhere else), and a task name that is not one
plain path component (``..``, ``a/b``) is an error before anything is written.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tftrace.errors import TftraceError

from . import rundir
from .options import RecordOptions, Target
from .run_end import finish_manifest
from .safe_files import atomic_output, safe_dir
from .sources import SourceState, SourceStatus

CAPTURE_FILE = "capture.json"
CAPTURE_KIND = "tftrace-capture"
INFO_TIMEOUT_S = 5.0
DATA_TIMEOUT_S = 60.0
TRACE_GRACE_S = 120.0  # TF's import and the hosts' answers, beyond the duration
# The most an endpoint's answer may hold, read as it comes (a byte more is an error): /info is
# a few hundred bytes; /run holds the threads of the window twice (identity, OS table) and the
# digests of at most 500 source files: a process of thousands of threads stays under 32 MiB;
# /samples is 65 bytes per thread and reading (100 Hz): 1 GiB is 300 s of 550 threads.
INFO_MAX_BYTES = 1 << 20
RUN_MAX_BYTES = 32 << 20
SAMPLES_MAX_BYTES = 1 << 30
ERROR_MAX_BYTES = 64 << 10
TOKEN_ENV = "TFTRACE_TOKEN"  # as serve_access.TOKEN_ENV (not imported: the capture is light)


@dataclass(frozen=True)
class Address:
    """One host to capture: ``grpc://HOST:PORT``, its data endpoint on ``PORT + 1`` unless
    ``?data_port=N`` says otherwise, and the endpoint's token where it asks for one
    (``?token=T``, else the capture's ``--token`` or ``TFTRACE_TOKEN``)."""

    host: str
    port: int
    data_port: int
    token: str | None = field(default=None, repr=False, compare=False)

    @property
    def grpc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"grpc://{host}:{self.port}"

    @property
    def data_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.data_port}/tftrace/v1/"

    @property
    def label(self) -> str:
        """``host_port``, as TF names the host's trace file, and the directory of a host
        without a TF_CONFIG task."""
        return re.sub(r"[^A-Za-z0-9._-]", "_", f"{self.host}_{self.port}")


def parse_addresses(text: str, token: str | None = None) -> list[Address]:
    """``grpc://h:p[?data_port=N][&token=T],...`` as a list, ``token`` the token of those
    without their own; a bad one raises ``TftraceError`` (its token is not repeated)."""
    found = []
    for item in (part.strip() for part in text.split(",")):
        url = urlsplit(item if "://" in item else f"grpc://{item}")
        try:
            port, host = url.port, url.hostname
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            data_port = int(query.pop("data_port", 0)) or (port or 0) + 1
        except ValueError:
            port, host, query, data_port = None, None, {}, 0
        own = query.pop("token", None)
        if url.scheme != "grpc" or not host or not port or query or url.path or data_port > 65535:
            shown = item.split("?", 1)[0] + ("?..." if "?" in item else "")
            raise TftraceError(
                f"bad address {shown!r}: give grpc://HOST:PORT (the port of tftrace.serve), "
                "optionally ?data_port=N and &token=T"
            )
        found.append(Address(host, port, data_port, own or token or None))
    if len({a.grpc for a in found}) < len(found):
        raise TftraceError(f"an address is given twice: {text}")
    return found


@dataclass
class HostCapture:
    """What one host gave: ``answered`` when its trace arrived; ``path`` its directory;
    ``data`` "received", or why its run data (samples, identity, manifest) is missing."""

    address: str
    data_port: int
    name: str | None = None
    task: str | None = None
    path: str | None = None
    answered: bool = False
    data: str = "not asked"
    problem: str | None = None  # why it did not answer
    window_wall_ns: list[int] | None = None  # [start, end] on the host's clock


@dataclass
class CaptureResult:
    """A capture's directory and its hosts (``capture.json``)."""

    path: Path
    duration_s: float
    hosts: list[HostCapture] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": CAPTURE_KIND,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "duration_s": self.duration_s,
            "service_addr": ",".join(h.address for h in self.hosts),
            "hosts": [asdict(h) for h in self.hosts],
        }


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the endpoint never redirects; the token stays with the host named


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def _open(address: Address, path: str, timeout: float) -> Any:
    headers = {"Authorization": f"Bearer {address.token}"} if address.token else {}
    request = urllib.request.Request(address.data_url + path, headers=headers)
    return _OPENER.open(request, timeout=timeout)


def _get(address: Address, path: str, timeout: float, limit: int) -> bytes:
    """The endpoint's answer to ``path``; ValueError when it holds more than ``limit`` bytes."""
    with _open(address, path, timeout) as response:
        body = bytes(response.read(limit + 1))
    if len(body) > limit:
        raise ValueError(f"its answer to /{path.split('?')[0]} is over {limit} bytes")
    return body


def _save(address: Address, path: str, timeout: float, limit: int, dest: Path) -> None:
    """The endpoint's answer to ``path``, written to ``dest`` as it comes; ValueError (and
    nothing written) when it holds more than ``limit`` bytes."""
    with _open(address, path, timeout) as response, atomic_output(dest) as out:
        left = limit + 1
        while left > 0 and (block := response.read(min(left, 1 << 20))):
            out.write(block)
            left -= len(block)
        if left <= 0:
            raise ValueError(f"its answer to /{path.split('?')[0]} is over {limit} bytes")


def _why(e: Exception) -> str:
    if isinstance(e, urllib.error.HTTPError):
        try:
            return str(json.loads(e.read(ERROR_MAX_BYTES))["error"])[:500]
        except (ValueError, KeyError, TypeError, OSError):
            return f"HTTP {e.code}"
    reason = getattr(e, "reason", None) or e
    return str(getattr(reason, "strerror", None) or reason)


def _info(address: Address) -> tuple[dict[str, Any] | None, str | None, int, int]:
    """(the host's /info, or None and why), with this machine's monotonic ns before and
    after the request."""
    sent = time.monotonic_ns()
    data: dict[str, Any] | None = None
    try:
        answer = json.loads(_get(address, "info", INFO_TIMEOUT_S, INFO_MAX_BYTES))
        anchor = answer.get("anchor") if isinstance(answer, dict) else None
        if not isinstance(anchor, dict) or not isinstance(anchor.get("wall_ns"), int):
            raise ValueError("its answer to /info is not tftrace's")
        data, problem = answer, None
    except urllib.error.HTTPError as e:
        problem = f"the data endpoint on port {address.data_port} refused: {_why(e)}"
    except (OSError, ValueError) as e:
        problem = f"no tftrace.serve data endpoint on port {address.data_port}: {_why(e)}"
    return data, problem, sent, time.monotonic_ns()


def capture(addresses: list[Address], duration_s: float, output: Path) -> CaptureResult:
    """Capture every host of ``addresses`` for ``duration_s`` into ``output`` (see the module's
    docstring). Raises ``TftraceError`` when ``output`` is not empty or no host answered."""
    if not duration_s > 0:
        raise TftraceError(f"--duration must be more than 0 seconds, not {duration_s}")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise TftraceError(f"output directory is not empty: {output}")
    created = not output.exists()
    safe_dir(output)  # -o DIR: refused when it is a link
    result = CaptureResult(output, duration_s)
    try:
        _capture(addresses, duration_s, result)
    except BaseException:
        _clean(output, created)
        raise
    if not any(h.answered for h in result.hosts):
        _clean(output, created)
        why = "; ".join(f"{h.address}: {h.problem}" for h in result.hosts)
        raise TftraceError(f"no host answered ({why})")
    rundir.write_json_atomic(output / CAPTURE_FILE, result.to_json())
    return result


def _clean(output: Path, created: bool) -> None:
    if created:
        shutil.rmtree(output, ignore_errors=True)
    else:
        for child in output.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def _capture(addresses: list[Address], duration_s: float, result: CaptureResult) -> None:
    with ThreadPoolExecutor(max_workers=min(16, len(addresses))) as pool:
        infos = list(pool.map(_info, addresses))
    tasks = [_task(info, address) for address, (info, *_) in zip(addresses, infos, strict=True)]
    names = _names(addresses, tasks)
    staging = Path(tempfile.mkdtemp(prefix=".trace-", dir=result.path))
    try:
        clocks, tf_log = _trace(addresses, duration_s, staging)
        for address, (info, problem, sent, received), name, task in zip(
            addresses, infos, names, tasks, strict=True
        ):
            host = HostCapture(address.grpc, address.data_port, name, task)
            result.hosts.append(host)
            xplane = _xplane(staging, address)
            if xplane is None:
                host.problem = _lost(address, problem, clocks.get("error"), tf_log)
                continue
            host.answered, host.path = True, name
            target = result.path / name
            session = target / rundir.PROFILE_DIR / xplane.parent.name
            safe_dir(session, root=result.path)
            shutil.move(str(xplane), session / xplane.name)
            if info is None:
                host.data = problem or "no answer"
                continue
            anchor = info["anchor"]
            start = anchor["wall_ns"] + clocks["begin"]["monotonic_ns"] - received
            end = anchor["wall_ns"] + clocks["end"]["monotonic_ns"] - sent
            host.window_wall_ns = [start, end]
            try:
                _write_run(rundir.RunDir(target), address, host, duration_s)
                host.data = "received"
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
                host.data = f"the data endpoint failed: {_why(e)}"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def check_task_name(name: str, address: str) -> None:
    """Raise ``TftraceError`` unless the task name an endpoint gave is one plain path
    component: not empty, ``.`` or ``..``, without ``/``, ``\\`` or NUL. It names a directory
    under ``-o``: ``..`` or ``a/b`` would write outside it."""
    if name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        raise TftraceError(
            f"{address} gives the task name {name[:80]!r}, which is not one directory name "
            "(not empty, '.' or '..', no '/', '\\' or NUL): nothing is written"
        )


def _task(info: dict[str, Any] | None, address: Address) -> str | None:
    """The TF_CONFIG task an endpoint gave, checked (``check_task_name``); None without one."""
    task = (info or {}).get("task")
    if not isinstance(task, str):
        return None
    check_task_name(task, address.grpc)
    return task


def _names(addresses: list[Address], tasks: list[str | None]) -> list[str]:
    """Each host's directory: its TF_CONFIG task where it has one that no other host has,
    else ``host_port``."""
    names = [
        task
        if task is not None and tasks.count(task) == 1 and re.fullmatch(r"[A-Za-z0-9._-]+", task)
        else address.label
        for address, task in zip(addresses, tasks, strict=True)
    ]
    # a task named as another host's label, or as the capture's own file: the labels
    return [
        name if names.count(name) == 1 and name != CAPTURE_FILE else address.label
        for address, name in zip(addresses, names, strict=True)
    ]


def _trace(addresses: list[Address], duration_s: float, logdir: Path) -> tuple[dict[str, Any], str]:
    """TF's client over all hosts at once: (its result: this machine's clocks around the
    call, the error), TF's own log."""
    result = logdir / "result.json"
    command = [
        sys.executable,
        "-m",
        "tftrace.tracer.capture_trace",
        str(result),
        str(logdir),
        str(max(1, round(duration_s * 1000))),
        ",".join(a.grpc for a in addresses),
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=duration_s + TRACE_GRACE_S
        )
    except subprocess.TimeoutExpired:
        raise TftraceError(
            f"TensorFlow's profiler client did not return within {duration_s + TRACE_GRACE_S:.0f} s"
        ) from None
    clocks = rundir.read_json_or_none(result)
    if clocks is None:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise TftraceError(f"TensorFlow's profiler client failed: {last}")
    return clocks, done.stdout + done.stderr


def _xplane(logdir: Path, address: Address) -> Path | None:
    found = sorted((logdir / rundir.PROFILE_DIR).glob(f"*/{address.label}.xplane.pb"))
    return found[-1] if found else None


def _lost(address: Address, problem: str | None, error: str | None, tf_log: str) -> str:
    """Why a host sent no trace, in words: TF's own line about it, else the endpoint's."""
    mine = f"{address.host}:{address.port}"
    for line in tf_log.splitlines():
        if mine in line and "]" in line:
            return "no trace: " + line.split("]", 1)[1].strip()
    if problem is not None:
        return f"no trace; {problem}"
    return f"no trace ({error})" if error else "no trace"


def _write_run(run: rundir.RunDir, address: Address, host: HostCapture, duration_s: float) -> None:
    """The run directory of one host, from its endpoint's answer for the window."""
    assert host.window_wall_ns is not None
    start, end = host.window_wall_ns
    query = f"?start_wall_ns={start}&end_wall_ns={end}"
    answer = json.loads(_get(address, "run" + query, DATA_TIMEOUT_S, RUN_MAX_BYTES))
    for sub in (rundir.STDOUT_LOG.parent, rundir.OS_SAMPLES_DIR):
        safe_dir(run / sub, root=run.path)
    sampler = SourceStatus.from_json(answer["os_sampler"])
    if answer.get("os_threads") is not None and sampler.state is SourceState.RECORDED:
        samples = run / rundir.OS_SAMPLES_DIR / "samples-00000.npz"
        _save(address, "samples" + query, DATA_TIMEOUT_S, SAMPLES_MAX_BYTES, samples)
        rundir.write_json_atomic(run / rundir.OS_THREADS_TABLE, answer["os_threads"])
    if answer.get("identity") is not None:
        rundir.write_json_atomic(run / rundir.IDENTITY, answer["identity"])
    data, report = answer["manifest"], answer["report"]
    data["run_dir"] = str(run.path.resolve())
    data["options"]["duration_s"] = duration_s
    data["recording"].update(
        address=address.grpc,
        data_port=address.data_port,
        task=host.task,
        window_wall_ns=host.window_wall_ns,
        capture=f"../{CAPTURE_FILE}",
    )
    report["tf_profiler"] = {"status": "recorded", "service": address.grpc}
    rundir.write_json_atomic(run / rundir.WORKLOAD_REPORT, report)
    statuses = {
        "os_sampler": sampler,
        "pyspy": SourceStatus(SourceState.DISABLED, "tftrace capture records no Python stacks"),
    }
    target = data.get("target") or {}
    options = RecordOptions(
        target=Target(target.get("kind", "code"), target.get("value", "?")),
        pyspy=False,
        sampler=data["options"]["sampler"],
        sample_hz=data["options"]["sample_hz"],
        duration_s=duration_s,
        thread_identity=answer.get("identity") is not None,
    )
    env = {k: v for k, v in (data.get("env") or {}).items() if isinstance(v, str)}
    finish_manifest(data, run, options, env, report, None, statuses, end_anchor=answer["anchor"])
