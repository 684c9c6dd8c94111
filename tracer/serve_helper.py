"""The helper process of a served program: ``python -m tftrace.tracer.serve_helper CONFIG``.

``tftrace.serve`` keeps an OS sampler running for as long as the program runs, so that a
capture can ask for the samples of any recent window. As for ``tftrace.profile``
(``attach.py``), the sampler runs here, under SCHED_BATCH, and not in a thread of the
program, whose GIL it would take 100 times a second for hours. It writes the usual
``os_threads/`` files into the directory of the config, keeping the last ``keep_s``
seconds (``sample_buffer.RollingSampler``).

Protocol: it writes ``started`` (or one line saying why not) on stdout, then samples until
its stdin closes (the program ended) or the program is gone; it removes its directory as it
ends.
"""

from __future__ import annotations

import json
import select
import shutil
import sys
from pathlib import Path

from . import rundir
from .priority import yielding_to_the_workload
from .safe_files import safe_dir
from .sample_buffer import RollingSampler


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    root = Path(config["dir"])
    sampler = RollingSampler(root / rundir.OS_SAMPLES_DIR, config["hz"], config["keep_s"])
    try:
        problem = sampler.availability()
        if problem is None:
            safe_dir(root / rundir.OS_SAMPLES_DIR, root=root)
            with yielding_to_the_workload():
                sampler.start(config["pid"])
        print(problem or "started", flush=True)
        if problem is not None:
            return 1
        # Until the program closes the pipe, or its threads are gone (a child it forked may
        # hold the pipe open after it ended).
        while sampler.running():
            ready, _, _ = select.select([sys.stdin], [], [], 1.0)
            if ready and not sys.stdin.readline():
                break
        sampler.stop()
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
