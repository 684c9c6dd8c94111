"""The helper process of an in-code recording: ``python -m tftrace.tracer.attach CONFIG``.

``tftrace.profile`` records the process it runs in. py-spy cannot sample its own process,
and a sampler thread inside it would take the workload's GIL 100 times a second, so both
run here, in a child process, against the parent, as ``tftrace record`` runs them beside a
launched workload (the same sources, built and run the same way: ``record_sources.py``,
``sources.running``; the same files in the run directory).

Protocol, one line each way: the parent allows this process to trace it, writes ``start``;
this process starts its sources and answers ``started`` and, after a space, the states of
those that did not start as a JSON object (``{}`` when all did); or, when it cannot start
them at all, one line saying why. The parent writes ``stop`` (or its end closes the pipe);
this process stops them and answers with every source's state as one JSON line. Nothing
else is written to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import rundir
from .helper_configs import AttachConfig, ConfigError
from .record_sources import build
from .sources import running, states_json


def main(config_path: str) -> int:
    try:
        config: AttachConfig | None = AttachConfig.read(Path(config_path))
        problem = None
    except ConfigError as e:
        config, problem = None, str(e)
    if sys.stdin.readline().strip() != "start":
        return 1  # the parent gave up before the start
    if config is None:
        print(problem, flush=True)
        return 1
    sources = build(rundir.RunDir(Path(config.run_dir)), config)
    with running(sources, config.pid) as states:
        print(f"started {states_json(states)}", flush=True)
        sys.stdin.readline()  # "stop", or "" when the parent is gone
    try:
        print(states_json(states), flush=True)
    except OSError:
        return 1  # the parent is gone: what the sources wrote stays in the run directory
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
