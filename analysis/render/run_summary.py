"""A first look at a run directory: what ran, what each source recorded, threads per pool."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.analysis.model import run_files
from tftrace.analysis.model.onednn import onednn_text
from tftrace.analysis.model.pools import Pool, pool_of_identity
from tftrace.errors import TftraceError
from tftrace.tracer import rundir
from tftrace.tracer.manifest_reader import Manifest, SourceRecord, read_manifest
from tftrace.tracer.safe_read import FileAbsent, UnreadableFile
from tftrace.tracer.step_range import format_steps


class RunDirError(TftraceError):
    """Not a readable run directory (one line for the user)."""


@dataclass(frozen=True)
class RunSummary:
    path: Path
    manifest: Manifest
    os_threads_by_pool: dict[Pool, int]
    sampled_threads: int | None
    damaged: tuple[str, ...] = ()  # recorded files unreadable (or records in them), and why


def os_threads_by_pool(identity: dict[str, Any] | None) -> dict[Pool, int]:
    if not identity:
        return {}
    counts = Counter(pool_of_identity(t)[0] for t in identity.get("threads", []))
    return {pool: counts[pool] for pool in Pool if counts[pool]}


def summarize(path: Path) -> RunSummary:
    if not path.is_dir():
        raise RunDirError(f"{path}: no such run directory")
    try:
        manifest = read_manifest(path / rundir.MANIFEST)
    except FileAbsent:
        raise RunDirError(f"{path}: no {rundir.MANIFEST} (not a tftrace run directory)") from None
    except UnreadableFile as e:
        raise RunDirError(str(e)) from None
    damaged: list[str] = []  # what of the recorded files could not be read, and why
    identity = run_files.read_identity(path, damaged)
    table = run_files.read_thread_table(path, damaged)
    sampled = len(table.get("threads") or []) if table else None
    return RunSummary(path, manifest, os_threads_by_pool(identity), sampled, tuple(damaged))


def _figure(figures: Mapping[str, Any], key: str) -> str:
    """A source's figure as written (a float as ``:g``), ``?`` where it is no number."""
    value = figures.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _source_line(name: str, source: SourceRecord) -> str:
    state = source.state or "?"
    figures = source.details  # each source's own figures, as it reported them
    extra = ""
    if name == "os_sampler" and state == "recorded":
        extra = (
            f" ({_figure(figures, 'samples')} samples of {_figure(figures, 'threads')} threads "
            f"at {_figure(figures, 'hz')} Hz)"
        )
    elif name == "tf_profiler" and state == "recorded":
        xplanes = figures.get("xplane")
        extra = f" ({', '.join(map(str, xplanes if isinstance(xplanes, list) else []))})"
        if figures.get("note"):  # e.g. a steps window the workload's end cut short
            extra += f": {figures['note']}"
    elif name == "pyspy" and state == "recorded":
        extra = f" ({figures.get('samples_line') or 'chrometrace'})"
    elif name == "thread_identity" and state == "recorded":
        resolved, threads = _figure(figures, "resolved"), _figure(figures, "threads")
        extra = f" ({resolved} of {threads} OS threads mapped to trace ids)"
    elif source.reason:
        extra = f": {source.reason}"
    return f"{name:16} {state}{extra}"


RECORDED_BY = {
    "record": "tftrace record",
    "profile": "tftrace.profile (a block of the program)",
    "keras": "tftrace.keras.ProfileCallback",
    "capture": "tftrace capture (a running program, served by tftrace.serve)",
}


def recording_text(manifest: Manifest) -> str:
    """``tftrace record, steps 100:120``: what recorded the run, and its steps window."""
    recording = manifest.recording
    how = recording.how or "?"
    text = RECORDED_BY.get(how, how)
    if recording.steps is not None:
        unit = "batches" if how == "keras" else "steps"
        text += f", {unit} {format_steps(recording.steps)}"
    return text


def summary_lines(summary: RunSummary) -> list[str]:
    m = summary.manifest
    exception = m.workload.exception
    lines = [
        f"run        {summary.path}",
        f"status     {m.status}  (workload exit code {m.workload.exit_code}"
        + (f", {exception.type}: {exception.message}" if exception else "")
        + ")",
        f"command    {' '.join(m.workload_command[1:])}",
        f"recorded   {recording_text(m)}",
        f"versions   python {m.versions.get('python')}, tensorflow "
        f"{m.versions.get('tensorflow_runtime', '?')}",
        f"cpus       {len(m.host.cpu_affinity)} schedulable of {m.host.cpu_count}",
        f"oneDNN     {onednn_text(m)}",
    ]
    for pool, info in m.pools.items():
        lines.append(f"{pool:10} {info.size} threads ({info.source})")
    if summary.os_threads_by_pool:
        counts = ", ".join(f"{n} {pool.value}" for pool, n in summary.os_threads_by_pool.items())
        lines.append(f"threads    {counts}")
    lines.append("sources")
    for name, source in sorted(m.sources.items()):
        lines.append("  " + _source_line(name, source))
    lines.extend(f"damaged    {note}" for note in summary.damaged)
    return lines


def render_summary(summary: RunSummary) -> None:
    """The summary's lines: the manifest's fields (the script's argv, an exception's message,
    hostnames) are the user's, shown as text (``console.say``)."""
    from tftrace.analysis.render.console import console as make_console
    from tftrace.analysis.render.console import say

    console = make_console(width=None, highlight=False)
    for line in summary_lines(summary):
        say(console, line)


def render_record_footer(path: Path, manifest: Manifest) -> None:
    import sys

    from tftrace.analysis.render.formatting import printable

    out, shown = sys.stderr, printable(path)
    print(f"\ntftrace: run directory {shown} ({printable(manifest.status)})", file=out)
    for name, source in sorted(manifest.sources.items()):
        print("  " + printable(_source_line(name, source)), file=out)
    print(f"next: tftrace summary {shown}", file=out)
    print(f"      tftrace threads {shown}    (which thread is in which pool, and why)", file=out)
    print(f"      tensorboard --logdir {shown}", file=out)
