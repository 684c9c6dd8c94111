"""``tftrace capture grpc://h:p,... --duration S -o DIR``: record running programs that called
``tftrace.serve``, every host at once, into one run directory per host.

1. Each host's data endpoint (``serve_endpoint.py``) is asked for its clocks and TF_CONFIG
   task (``/info``). 2. TensorFlow's profiler client traces all hosts in one call
   (``capture_trace.py``, in a process of its own). 3. Each host that sent a trace is asked
   for the run data of the window (``/run``, ``/samples``), on its own clock: the window
   starts at its ``/info`` reading plus the time this machine waited before the trace, and
   ends no earlier than the trace did. 4. ``DIR/<name>/`` is written as ``tftrace record``
   writes a run directory, ``DIR/capture.json`` says who answered.
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
from .sources import SourceState, SourceStatus

CAPTURE_FILE = "capture.json"
CAPTURE_KIND = "tftrace-capture"
INFO_TIMEOUT_S = 5.0
DATA_TIMEOUT_S = 60.0
TRACE_GRACE_S = 120.0  # TF's import and the hosts' answers, beyond the duration


@dataclass(frozen=True)
class Address:
    """One host to capture: ``grpc://HOST:PORT``, its data endpoint on ``PORT + 1`` unless
    ``?data_port=N`` says otherwise."""

    host: str
    port: int
    data_port: int

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


def parse_addresses(text: str) -> list[Address]:
    """``grpc://h:p[?data_port=N],...`` as a list; a bad one raises ``TftraceError``."""
    found = []
    for item in (part.strip() for part in text.split(",")):
        url = urlsplit(item if "://" in item else f"grpc://{item}")
        try:
            port, host = url.port, url.hostname
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            data_port = int(query.pop("data_port", 0)) or (port or 0) + 1
        except ValueError:
            port, host, query, data_port = None, None, {}, 0
        if url.scheme != "grpc" or not host or not port or query or url.path or data_port > 65535:
            raise TftraceError(
                f"bad address {item!r}: give grpc://HOST:PORT (the port of tftrace.serve), "
                "optionally ?data_port=N"
            )
        found.append(Address(host, port, data_port))
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


def _get(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read())


def _why(e: Exception) -> str:
    if isinstance(e, urllib.error.HTTPError):
        try:
            return str(json.loads(e.read())["error"])
        except (ValueError, KeyError, TypeError, OSError):
            return f"HTTP {e.code}"
    reason = getattr(e, "reason", None) or e
    return str(getattr(reason, "strerror", None) or reason)


def _info(address: Address) -> tuple[dict[str, Any] | None, str | None, int, int]:
    """(the host's /info, or None and why), with this machine's monotonic ns before and
    after the request."""
    sent = time.monotonic_ns()
    try:
        data = json.loads(_get(address.data_url + "info", INFO_TIMEOUT_S))
        problem = None
    except (OSError, ValueError) as e:
        data, problem = (
            None,
            f"no tftrace.serve data endpoint on port {address.data_port}: {_why(e)}",
        )
    return data, problem, sent, time.monotonic_ns()


def capture(addresses: list[Address], duration_s: float, output: Path) -> CaptureResult:
    """Capture every host of ``addresses`` for ``duration_s`` into ``output`` (see the module's
    docstring). Raises ``TftraceError`` when ``output`` is not empty or no host answered."""
    if not duration_s > 0:
        raise TftraceError(f"--duration must be more than 0 seconds, not {duration_s}")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise TftraceError(f"output directory is not empty: {output}")
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
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
    staging = Path(tempfile.mkdtemp(prefix=".trace-", dir=result.path))
    try:
        clocks, tf_log = _trace(addresses, duration_s, staging)
        names = _names(addresses, [info for info, *_ in infos])
        for address, (info, problem, sent, received), name in zip(
            addresses, infos, names, strict=True
        ):
            host = HostCapture(address.grpc, address.data_port, name, (info or {}).get("task"))
            result.hosts.append(host)
            xplane = _xplane(staging, address)
            if xplane is None:
                host.problem = _lost(address, problem, clocks.get("error"), tf_log)
                continue
            host.answered, host.path = True, name
            target = result.path / name
            session = target / rundir.PROFILE_DIR / xplane.parent.name
            session.mkdir(parents=True)
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
            except (OSError, ValueError, KeyError) as e:
                host.data = f"the data endpoint failed: {_why(e)}"
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _names(addresses: list[Address], infos: list[dict[str, Any] | None]) -> list[str]:
    """Each host's directory: its TF_CONFIG task where it has one that no other host has,
    else ``host_port``."""
    tasks = [(info or {}).get("task") for info in infos]
    return [
        task
        if isinstance(task, str)
        and tasks.count(task) == 1
        and re.fullmatch(r"[A-Za-z0-9._-]+", task)
        else address.label
        for address, task in zip(addresses, tasks, strict=True)
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
    answer = json.loads(_get(address.data_url + "run" + query, DATA_TIMEOUT_S))
    for sub in (rundir.STDOUT_LOG.parent, rundir.OS_SAMPLES_DIR):
        (run / sub).mkdir(parents=True, exist_ok=True)
    sampler = SourceStatus.from_json(answer["os_sampler"])
    if answer.get("os_threads") is not None and sampler.state is SourceState.RECORDED:
        body = _get(address.data_url + "samples" + query, DATA_TIMEOUT_S)
        (run / rundir.OS_SAMPLES_DIR / "samples-00000.npz").write_bytes(body)
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
