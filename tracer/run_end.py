"""The end of a recording, launched (``recorder.py``) or in code (``in_process.py``): each
source's final state and the manifest that says what was recorded."""

from __future__ import annotations

import signal
from typing import Any

from . import manifest, rundir
from .environment import clock_anchor
from .options import RecordOptions
from .rundir import RunDir
from .sources import SourceState, SourceStatus


def source_from_report(report: dict[str, Any] | None, options: RecordOptions) -> SourceStatus:
    if not options.tf_profiler:
        return SourceStatus(SourceState.DISABLED, "disabled by option")
    status = dict((report or {}).get("tf_profiler") or {})
    if report is None:
        return SourceStatus(
            SourceState.FAILED,
            "the workload process died before the profiler could be stopped (no trace flushed)",
        )
    state = status.pop("status", "failed")
    if state == "recorded":
        return SourceStatus(SourceState.RECORDED, None, status)
    return SourceStatus(SourceState.FAILED, status.pop("error", state), status)


def identity_status(run: RunDir) -> SourceStatus:
    data = rundir.read_json_or_none(run / rundir.IDENTITY)
    if data is None:
        return SourceStatus(SourceState.FAILED, "thread identity snapshot missing")
    threads = data.get("threads", [])
    resolved = sum(1 for t in threads if t.get("trace_line_id") is not None)
    details = {"threads": len(threads), "resolved": resolved, "snapshots": data.get("snapshots")}
    if not resolved:
        return SourceStatus(
            SourceState.FAILED, "; ".join(data.get("errors") or ["no thread"]), details
        )
    return SourceStatus(SourceState.RECORDED, None, details)


def finish_manifest(
    data: dict[str, Any],
    run: RunDir,
    options: RecordOptions,
    env: dict[str, str],
    report: dict[str, Any] | None,
    returncode: int | None,
    statuses: dict[str, SourceStatus],
    interrupted_by: int | None = None,
    forced_kill: bool = False,
    end_anchor: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The manifest as the recording ends: the sources' states, what the workload reported of
    itself, the pools and the files, written over the initial one and returned.
    ``returncode`` None: the process runs on (a capture); ``end_anchor``: the recorded
    process's clocks at the end, where they are not this process's (default: read now)."""
    statuses["tf_profiler"] = source_from_report(report, options)
    statuses["thread_identity"] = (
        identity_status(run)
        if options.thread_identity
        else SourceStatus(SourceState.DISABLED, "disabled by option")
    )
    xplanes = run.xplane_files()
    if statuses["tf_profiler"].state is SourceState.RECORDED:
        statuses["tf_profiler"].details["xplane"] = [str(p.relative_to(run.path)) for p in xplanes]
    data["status"] = manifest.final_status(interrupted_by is not None, report)
    if interrupted_by is not None:
        data["interrupted_by"] = signal.Signals(interrupted_by).name
        data["forced_kill"] = forced_kill
    data["clock"]["end"] = end_anchor or clock_anchor()
    if report is not None:
        data["clock"]["workload"] = {
            k: report.get(k)
            for k in ("start_anchor", "code_start_anchor", "end_anchor", "finished_anchor")
        }
        if report.get("tensorflow_version"):
            data["versions"]["tensorflow_runtime"] = report["tensorflow_version"]
    data["workload"] = manifest.workload_section(report, returncode)
    data["pools"] = manifest.pools(report, env, data["host"]["cpu_affinity"])
    data["sources"] = {name: status.to_json() for name, status in sorted(statuses.items())}
    data["files"] = manifest.files_present(run)
    rundir.write_json_atomic(run / rundir.MANIFEST, data)
    return data
