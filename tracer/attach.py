"""The helper process of an in-code recording: ``python -m tftrace.tracer.attach CONFIG``.

``tftrace.profile`` records the process it runs in. py-spy cannot sample its own process,
and a sampler thread inside it would take the workload's GIL 100 times a second, so both
run here, in a child process, against the parent, as ``tftrace record`` runs them beside a
launched workload (same sources, same SCHED_BATCH, same files in the run directory).

Protocol, one line each way: the parent allows this process to trace it, writes ``start``;
this process starts its sources and answers ``started``. The parent writes ``stop`` (or its
end closes the pipe); this process stops them and answers with their statuses as one JSON
line. Nothing else is written to stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from . import rundir
from .options import DEFAULT_MACHINE_HZ
from .os_sampler import OsThreadSampler
from .priority import yielding_to_the_workload
from .pyspy import PySpySource
from .sources import SourceState, SourceStatus


def sources_for(run: rundir.RunDir, config: dict[str, Any]) -> dict[str, Any]:
    """The sources the config asks for, by name, as ``tftrace record`` builds them."""
    wanted: dict[str, Any] = {}
    if config.get("sampler", True):
        wanted["os_sampler"] = OsThreadSampler(
            run / rundir.OS_SAMPLES_DIR,
            config["sample_hz"],
            machine_hz=config.get("machine_hz", DEFAULT_MACHINE_HZ),
        )
    if config.get("pyspy", True):
        wanted["pyspy"] = PySpySource(
            run / rundir.PYSPY_TRACE,
            run / rundir.PYSPY_LOG,
            config["pyspy_rate"],
            config.get("pyspy_native", False),
            config.get("pyspy_blocking", False),
            executable=config.get("pyspy_path"),
        )
    return wanted


def _start(sources: dict[str, Any], pid: int, statuses: dict[str, SourceStatus]) -> list[Any]:
    started = []
    for name, source in sources.items():
        problem = source.availability()
        if problem is not None:
            statuses[name] = SourceStatus(SourceState.UNAVAILABLE, problem)
            continue
        try:
            with yielding_to_the_workload():
                source.start(pid)
        except OSError as e:
            statuses[name] = SourceStatus(SourceState.FAILED, f"{name} did not start: {e}")
            continue
        started.append(source)
    return started


def _stop(started: list[Any], statuses: dict[str, SourceStatus]) -> None:
    for source in started:
        if isinstance(source, PySpySource):
            source.terminate()  # the workload goes on: py-spy writes its trace on SIGINT
        statuses[source.name] = source.stop()


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    run = rundir.RunDir(Path(config["run_dir"]))
    statuses: dict[str, SourceStatus] = {}
    if sys.stdin.readline().strip() != "start":
        return 1  # the parent gave up before the start
    started = _start(sources_for(run, config), config["pid"], statuses)
    print("started", flush=True)
    sys.stdin.readline()  # "stop", or "" when the parent is gone
    _stop(started, statuses)
    try:
        print(json.dumps({name: s.to_json() for name, s in statuses.items()}), flush=True)
    except OSError:
        return 1  # the parent is gone: what the sources wrote stays in the run directory
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
