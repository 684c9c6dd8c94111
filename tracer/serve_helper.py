"""The helper process of a served program: ``python -m tftrace.tracer.serve_helper CONFIG``.

``tftrace.serve`` keeps an OS sampler running for as long as the program runs, so that a
capture can ask for the samples of any recent window. As for ``tftrace.profile``
(``attach.py``), the sampler runs here, under SCHED_BATCH, and not in a thread of the
program, whose GIL it would take 100 times a second for hours; it is started and stopped as
every recording's sources are (``sources.running``). It writes the usual ``os_threads/``
files into the directory of the config, keeping the last ``keep_s`` seconds
(``sample_buffer.RollingSampler``).

Protocol: it writes ``started`` (or one line saying why not) on stdout, then samples until
its stdin closes (the program ended) or the program is gone; it removes its directory as it
ends.
"""

from __future__ import annotations

import select
import shutil
import sys
from pathlib import Path

from . import rundir
from .helper_configs import ConfigError, ServeHelperConfig
from .safe_files import safe_dir
from .sample_buffer import RollingSampler
from .sources import running


def main(config_path: str) -> int:
    try:
        config = ServeHelperConfig.read(Path(config_path))
    except ConfigError as e:
        print(e, flush=True)
        return 1
    root = Path(config.dir)
    sampler = RollingSampler(root / rundir.OS_SAMPLES_DIR, config.hz, config.keep_s)
    try:
        safe_dir(root / rundir.OS_SAMPLES_DIR, root=root)
        with running([sampler], config.pid) as states:
            not_started = states.get(sampler.name)
            if not_started is not None:
                print(not_started.reason or not_started.state.value, flush=True)
                return 1
            print("started", flush=True)
            # Until the program closes the pipe, or its threads are gone (a child it forked
            # may hold the pipe open after it ended).
            while sampler.running():
                ready, _, _ = select.select([sys.stdin], [], [], 1.0)
                if ready and not sys.stdin.readline():
                    break
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
