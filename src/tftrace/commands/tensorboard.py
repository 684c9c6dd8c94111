"""``tftrace tensorboard RUN``: the analysis as TensorBoard summaries, served beside the profile.

The summaries go into ``RUN/tftrace/`` (see ``tftrace.analysis.render.tensorboard``), with the
Thread pools tab's data for the run (``tftrace.analysis.tensorboard_plugin.cache``, so that the
tab opens at once, over the window asked for), then TensorBoard serves ``RUN`` on 127.0.0.1
until Ctrl-C: the Thread pools tab (tftrace's own plugin) shows the analysis, its profile plugin
the trace, and a run named ``tftrace`` holds the per-step series, the plots and the findings.

Figures and findings come from ``tftrace.analysis.analyze.analyze`` and the images from
``tftrace.analysis.render.plots.png_images``, as in the HTML report.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from tftrace.commands import add_analysis_arguments, analyze_run, path_kind
from tftrace.errors import CliError

NAME = "tensorboard"
HELP = "write the analysis as TensorBoard summaries into the run and serve it with TensorBoard"
HOST = "127.0.0.1"
TAB = "#tftrace"  # TensorBoard opens a plugin's tab at its name


def configure(parser: argparse.ArgumentParser) -> None:
    add_analysis_arguments(parser, "the summaries cover")
    parser.add_argument(
        "--port", type=int, default=0, help="port to serve on (default: a free one)"
    )
    parser.add_argument(
        "--no-serve", action="store_true", help="write the summaries into RUN/tftrace and exit"
    )


def run(ns: argparse.Namespace) -> int:
    if not 0 <= ns.port <= 0xFFFF:
        raise CliError(f"tensorboard: --port must be 0-65535, not {ns.port}")
    from tftrace.analysis.render.plots import png_images
    from tftrace.analysis.render.tensorboard import write_summaries
    from tftrace.analysis.tensorboard_plugin.cache import store

    path_kind(NAME, ns.run)  # one run only: a directory of hosts or a sweep, one line
    analysis = analyze_run(ns)
    loaded = analysis.run
    try:
        written = write_summaries(analysis, images=png_images(analysis))
        store(analysis)
    except OSError as e:
        raise CliError(
            f"{e.filename or loaded.path}: cannot write summaries ({e.strerror})"
        ) from None
    print(f"summaries: {written}", flush=True)
    if ns.no_serve:
        return 0
    return serve(Path(loaded.path), ns.port)


def serve(logdir: Path, port: int) -> int:
    """Serve ``logdir`` with TensorBoard in this process until Ctrl-C (then exit 0)."""
    # A process started with SIGINT ignored (a parent that ignores it passes that on through
    # exec) would never stop on Ctrl-C: the server promises that it does.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        url = _launch(logdir, port)
        print(f"TensorBoard: {url}  (Ctrl-C to stop)", flush=True)
        print(f"Thread pools: {url.rstrip('/')}/{TAB}", flush=True)
        _sleep_until_interrupted()
    except KeyboardInterrupt:
        print("", flush=True)
    # Everything is written; TensorBoard's own non-daemon threads (a plugin still loading, a
    # reload pass) would hold the interpreter's exit for as long as they run: leave now.
    sys.stderr.flush()
    os._exit(0)


def _sleep_until_interrupted() -> None:
    """Sleep in short naps: SIGINT may land on one of TensorFlow's or the server's threads,
    which does not wake a main thread blocked without a timeout (Event().wait() would hang);
    Python raises KeyboardInterrupt in the main thread at its next wake-up."""
    while True:
        time.sleep(0.25)


def _launch(logdir: Path, port: int) -> str:
    """Start TensorBoard's server in a background thread; its URL (with the real port)."""
    from tensorboard import default, program

    from tftrace.analysis.tensorboard_plugin.plugin import ThreadPoolsPlugin

    # The Thread pools tab comes through tftrace's entry point; an install that did not
    # register it (a source checkout on the path) gets it here all the same.
    plugins = default.get_plugins()
    if ThreadPoolsPlugin not in plugins:
        plugins.append(ThreadPoolsPlugin)
    board = program.TensorBoard(plugins=plugins)
    board.configure(
        argv=[None, "--logdir", str(logdir), "--host", HOST, "--port", str(port)],
    )
    try:
        return str(board.launch())
    except program.TensorBoardServerException as e:
        raise CliError(f"tensorboard: {e.msg}") from None
