"""Which Python, as text: the rows and lines the terminal and the HTML report show.

Shown where Python time matters (``PythonTime.matters``: the breakdown's python share reached
``PythonTime.MATTERS_SHARE`` or the python-bound finding fired); otherwise one line says why not.
Nothing is computed here: every figure is a field of ``Analysis.python_time``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

HEADERS = ("function (file)", "self %", "total %", "self s", "~samples")
TOP_BY_SELF = 6
TOP_BY_TOTAL = 4
MAX_FUNCTION_CHARS = 70


def _short(function: str) -> str:
    if len(function) <= MAX_FUNCTION_CHARS:
        return function
    return "..." + function[-(MAX_FUNCTION_CHARS - 3) :]


def main_rows(analysis: Analysis, shorten: bool = True) -> list[tuple[str, ...]]:
    """The main thread's top functions by self time, then the next by total time."""
    python = analysis.python_time
    if python is None:
        return []
    rows = python.main_thread()
    picked = rows.nlargest(TOP_BY_SELF, "self_ns")
    rest = rows[~rows["function"].isin(picked["function"])]
    picked = [*picked.itertuples(), *rest.nlargest(TOP_BY_TOTAL, "total_ns").itertuples()]
    return [
        (
            _short(str(r.function)) if shorten else str(r.function),
            f"{r.self_share:.1%}",
            f"{r.total_share:.1%}",
            f"{r.self_ns / 1e9:.3f}",
            str(r.self_samples),
        )
        for r in picked
    ]


def title(analysis: Analysis) -> str:
    """Which thread the table is about, how much py-spy saw of it, and py-spy's health."""
    python = analysis.python_time
    if python is None:
        return ""
    thread = python.threads.iloc[0]
    return (
        f"which Python: {thread['name']} ({thread['pool']}), "
        f"{thread['sampled_ns'] / 1e9:.3f} s sampled in the window ({health_text(analysis)})"
    )


def health_text(analysis: Analysis) -> str:
    if analysis.python_time is None:
        return ""
    h = analysis.python_time.health
    mode = {True: "nonblocking", False: "blocking", None: "mode unknown"}[h.nonblocking]
    rate = f"{h.rate} Hz" if h.rate else "rate unknown"
    if h.error_share is None:
        return f"py-spy {rate}, {mode}"
    return f"py-spy {rate}, {mode}, {h.samples} samples, {h.error_share:.1%} errors"


def other_thread_lines(analysis: Analysis) -> list[str]:
    """One line per other Python thread: its sampled time and top function by self time."""
    python, lines = analysis.python_time, []
    if python is None:
        return []
    for thread in python.threads.iloc[1:].itertuples():
        rows = python.functions[python.functions["thread"] == thread.thread]
        top = rows.nlargest(1, "self_ns")
        head = f"other Python thread {thread.name}: {thread.sampled_ns / 1e9:.3f} s sampled"
        if len(top):
            r = top.iloc[0]
            head += f", top self {_short(str(r['function']))} {r['self_share']:.0%}"
        lines.append(head)
    return lines


def notes(analysis: Analysis) -> list[str]:
    """How to read the table, and py-spy's high error share with its reason."""
    python = analysis.python_time
    if python is None:
        return []
    out = [
        "self = innermost frame, total = anywhere on the stack; shares of the thread's "
        "sampled time; ~samples = self time x py-spy's rate"
    ]
    if python.health.high_errors_reason:
        out.append(
            f"py-spy failed {python.health.error_share:.0%} of its reads: "
            f"{python.health.high_errors_reason}"
        )
    return out


def python_share(analysis: Analysis) -> float:
    """The breakdown's python / host share of the window."""
    shares = analysis.breakdown.set_index("category")["share"]
    return float(shares.get("python / host", 0.0))


def not_shown(analysis: Analysis) -> str | None:
    """One line when the table is not shown (no py-spy data, or Python did not matter)."""
    python = analysis.python_time
    if python is None:
        return None
    if python.matters and python.note:
        return f"which Python: {python.note}"
    if not python.matters:
        data = "" if python.present else f"; {python.note}"
        return (
            f"which Python: not shown, python / host {python_share(analysis):.0%} of the window "
            f"(< {python.MATTERS_SHARE:.0%}) and no python-bound finding{data}"
        )
    return None
