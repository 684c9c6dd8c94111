"""One family of errors for everything a user can get wrong: the command line prints any
``TftraceError`` as one line and exits with code 2; a library caller catches the base class.

Each error's message is the whole line the user sees: it names the file or option at fault and
says why. Internal invariants (a broken schema, a bug) raise ordinary exceptions instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class TftraceError(Exception):
    """Bad input to tftrace: a missing or damaged file, a bad option, a workload that cannot run.

    Catch this to handle every user-facing failure of the library at once::

        try:
            run = tftrace.load("tftrace-runs/missing")
        except tftrace.TftraceError as e:
            print(e)  # "tftrace-runs/missing: no such file or directory"
    """


class CliError(TftraceError):
    """A bad command line (an option's value, a misplaced option)."""


class TraceError(TftraceError, ValueError):
    """A file or directory that cannot be loaded; the message names it and says why."""


@contextmanager
def error_context(prefix: str) -> Iterator[None]:
    """Put ``prefix: `` before the message of a ``TftraceError`` raised inside the block.

    A command that runs library code names itself this way (``sweep: script not found``);
    the error keeps its class, so callers that catch it by class still do.
    """
    try:
        yield
    except TftraceError as e:
        e.args = (f"{prefix}: {e}",)
        raise
