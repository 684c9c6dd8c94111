"""The one terminal escaper, with no dependency: the command line's error path uses it
where pandas (and TensorFlow) may not be importable."""

from __future__ import annotations


def printable(text: object) -> str:
    """``text`` with control characters and newlines shown as escapes (``\\x1b``, ``\\n``):
    names from a run (a process's, a thread's) never move the cursor or forge a line."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )
