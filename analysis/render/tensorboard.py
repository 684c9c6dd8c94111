"""tftrace's analysis as TensorBoard summaries, written next to the profile in the run directory.

``write_summaries(analysis)`` writes one event file into ``RUN/tftrace/``. TensorBoard names a run
after the directory of its event files, relative to ``--logdir``, so ``tensorboard --logdir RUN``
shows a run ``tftrace`` (scalars, images, text) beside the profile plugin's sessions of ``RUN``.

What is written (tags):

- ``concurrency/<pool>``: mean number of the pool's busy threads per bin, over the analysed window
  (``concurrency_series``). Step = the bin's start in ms since the recorder started (the run's
  time axis, as everywhere in tftrace); wall time = when that bin happened, so TensorBoard's
  "relative" axis is time since the first bin and its "wall" axis is the clock of the recording.
  Bins are whole milliseconds, at most ``MAX_POINTS`` per pool: TensorBoard keeps 1,000 points
  of a scalar series by default and would otherwise drop some at random.
- ``steps/duration_ms``, ``steps/breakdown/<category>`` (share of the step, 0-1) and
  ``steps/concurrency/<pool>`` (mean number of the pool's threads busy during the step): per
  step of the analysed window, step = step number, so TensorBoard's Time Series charts show
  how they move over the training (with more than ``MAX_POINTS`` steps, the mean of each run
  of consecutive steps, at its last).
- ``figures``: the whole-window figures of ``Analysis`` unchanged (per pool: size, mean and
  peak concurrency, utilisation, share of the cores, queue-delay percentiles; the breakdown),
  as markdown tables: one number each is no chart. The Thread pools tab (``tftrace``'s
  TensorBoard plugin) shows them with the findings, threads and figures.
- a server's requests (``Analysis.requests``; nothing of this for a loop):
  ``requests/in_flight`` (mean number of requests in flight per bin) and ``requests/completed``
  (requests that ended in the bin), over the analysed window on the concurrency's bins and
  steps; their count, requests/s, latency percentiles per function and where their time went
  as tables in ``figures``, and the summary in ``about``.
- ``plots/<name>``: PNG images given by the caller; ``findings`` and ``about``: markdown text.

The event file is written without TensorFlow: the summary protos and plugin metadata come from
the ``tensorboard`` package, the record framing is ``_record`` (tensorboard's ``RecordWriter``
computes CRC-32C in Python: a third of the time of a long run's summaries). tensorboard's
``EventFileWriter`` is not used: it opens files through ``tf.io.gfile``, which imports
TensorFlow when it is installed (seconds), and stamps the file with the current time rather than
the recording's. Per-step values share one event per step (a merged summary, as TF 1 wrote).
"""

from __future__ import annotations

import math
import re
import socket
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import google_crc32c
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.util import tensor_util

from tftrace.analysis.analyze import Analysis
from tftrace.analysis.findings import Finding
from tftrace.analysis.render import census_text, requests_text
from tftrace.analysis.render.core_use_text import headline
from tftrace.analysis.render.formatting import POOL_HEADERS, fmt, markdown_table, pool_rows
from tftrace.analysis.render.formatting import markdown_text as md
from tftrace.analysis.render.window_text import profiler_cost_line, warmup_line, window_line
from tftrace.tracer.safe_files import atomic_output, safe_dir

SUBDIR = "tftrace"
EVENT_FILE_GLOB = "events.out.tfevents.*"
MAX_POINTS = 1000
MS = 1_000_000
QUEUE_FIGURES = ("p50_us", "p90_us", "p99_us", "max_us")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SCALAR = tensor_shape_pb2.TensorShapeProto()


def summaries_dir(run_path: Path) -> Path:
    """Where the summaries of the run at ``run_path`` go: its own TensorBoard run."""
    return Path(run_path) / SUBDIR


def series_resolution_ns(window: tuple[int, int], max_points: int = MAX_POINTS) -> int:
    """Bin width of the concurrency series: whole ms (so steps in ms are distinct), and at most
    ``max_points`` bins so TensorBoard's default downsampling keeps every point."""
    width = max(window[1] - window[0], 1)
    return max(1, math.ceil(width / max_points / MS)) * MS


def write_summaries(
    analysis: Analysis,
    images: Mapping[str, bytes] | None = None,
    resolution_ns: int | None = None,
    directory: Path | None = None,
) -> Path:
    """Write the analysis as one event file into ``directory`` (default ``RUN/tftrace``).

    Earlier event files there are removed first, so writing twice never doubles points.
    The findings are the analysis' own ("No findings." when there are none). Returns the
    directory written.
    """
    target = directory or summaries_dir(analysis.run.path)
    clock = _Clock(analysis)
    resolution = resolution_ns or series_resolution_ns(analysis.window)
    events = [
        *about_events(analysis, clock, resolution),
        *figure_events(analysis, clock),
        *step_events(analysis, clock),
        *concurrency_events(analysis, clock, resolution),
        *request_events(analysis, clock, resolution),
        *image_events(images or {}, clock),
        *finding_events(analysis.findings, clock),
    ]
    _replace_event_files(target, events, clock.start_s)
    return target


class _Clock:
    """Wall time (s since the epoch) of a point on the run's time axis (ns)."""

    def __init__(self, analysis: Analysis) -> None:
        lo, hi = analysis.window
        # A bare trace from TF < 2.17 has no absolute start: place its end at "now".
        self.origin_ns = analysis.run.origin.wall_ns or time.time_ns() - hi
        self.start_s = self.wall(lo)

    def wall(self, t_ns: int) -> float:
        return (self.origin_ns + int(t_ns)) / 1e9


# --- sections ---------------------------------------------------------------------------------


def concurrency_events(analysis: Analysis, clock: _Clock, resolution_ns: int) -> list[Any]:
    """``concurrency/<pool>``: one point per bin, step = bin start in ms on the run's axis."""
    events: list[Any] = []
    for pool, busy in analysis.concurrency.items():
        series = busy.series(resolution_ns)
        tag = f"concurrency/{pool.value}"
        description = (
            f"Mean number of busy {pool.value} threads per {resolution_ns / MS:g} ms bin. "
            "Step: the bin's start, ms since the recorder started."
        )
        for i, (t_ns, value) in enumerate(zip(series["t_ns"], series["busy_threads"], strict=True)):
            summary = _scalar(tag, float(value), description if i == 0 else None)
            events.append(_event(summary, int(t_ns) // MS, clock.wall(int(t_ns))))
    return events


def request_events(analysis: Analysis, clock: _Clock, resolution_ns: int) -> list[Any]:
    """A server's ``requests/in_flight`` and ``requests/completed`` per bin (the concurrency's
    bins: step = bin start in ms on the run's axis); none for a loop."""
    series = analysis.requests_per_bin(resolution_ns)
    if analysis.requests is None or series is None:
        return []
    width = f"{resolution_ns / MS:g} ms bin"
    descriptions = {
        "in_flight": f"Mean number of requests in flight per {width} "
        f"({analysis.requests.source}). Step: the bin's start, ms since the recorder started.",
        "completed": f"Requests that ended in each {width}. Step: the bin's start, ms since the "
        "recorder started.",
    }
    events: list[Any] = []
    rows = zip(series["t_ns"], series["in_flight"], series["completed"], strict=True)
    for i, (t_ns, flight, completed) in enumerate(rows):
        first = i == 0
        values = [
            _scalar_value(
                "requests/in_flight", float(flight), descriptions["in_flight"] if first else None
            ),
            _scalar_value(
                "requests/completed", float(completed), descriptions["completed"] if first else None
            ),
        ]
        events.append(
            _event(summary_pb2.Summary(value=values), int(t_ns) // MS, clock.wall(int(t_ns)))
        )
    return events


def figure_events(analysis: Analysis, clock: _Clock) -> list[Any]:
    """``figures``: the whole-window figures as markdown tables (pools, queue delay,
    breakdown), one text at step 0."""
    description = "The analysed window's figures per pool and category."
    return [_event(_text("figures", render_figures(analysis), description), 0, clock.start_s)]


def render_figures(analysis: Analysis) -> str:
    """Markdown tables of the pools, queue-delay percentiles and breakdown of the window."""
    queue_rows = [
        (str(r["pool"]), str(r["closures"]), *(fmt(r[c], ".1f") for c in QUEUE_FIGURES))
        for r in analysis.queue_delay.to_dict("records")
    ]
    breakdown_rows = [
        (str(r["category"]), fmt(r["share"], ".1%")) for r in analysis.breakdown.to_dict("records")
    ]
    return "\n\n".join(
        (
            *requests_text.markdown_tables(analysis),
            markdown_table(POOL_HEADERS, pool_rows(analysis.pools)),
            *([census_text.markdown(analysis)] if analysis.census else []),
            markdown_table(("pool", "closures", *QUEUE_FIGURES), queue_rows),
            markdown_table(("category", "share of the window"), breakdown_rows),
        )
    )


def step_events(analysis: Analysis, clock: _Clock) -> list[Any]:
    """Per step (or per run of steps, ``Analysis.step_points``): its duration, its breakdown
    shares and each pool's mean concurrency, step = the (last) step's number."""
    table = analysis.step_points
    shares = [c for c in analysis.breakdown["category"] if c in table.columns]  # not "batches"
    pools = [c for c in table.columns if c not in analysis.steps.table.columns]
    events: list[Any] = []
    for i, row in enumerate(table.to_dict("records")):
        first = i == 0
        values = _maybe_value(
            "steps/duration_ms",
            row["duration_ns"] / 1e6,
            f"Duration of each step ({analysis.steps.source})." if first else None,
        )
        for column in shares:
            values += _maybe_value(
                f"steps/breakdown/{slug(column)}",
                row[column],
                f"Share of the step in category {column!r} (0-1)." if first else None,
            )
        for column in pools:  # concurrency/<pool>
            pool = column.partition("/")[2]
            values += _maybe_value(
                f"steps/{column}",
                row[column],
                f"Mean number of busy {pool} threads during the step." if first else None,
            )
        if values:  # one event per step, all its values (as a merged summary)
            summary = summary_pb2.Summary(value=values)
            events.append(_event(summary, int(row["step"]), clock.wall(int(row["start_ns"]))))
    return events


def image_events(images: Mapping[str, bytes], clock: _Clock) -> list[Any]:
    """``plots/<name>`` for each PNG given."""
    return [
        _event(_image(f"plots/{slug(name)}", png, name), 0, clock.start_s)
        for name, png in images.items()
    ]


def finding_events(findings: Sequence[Finding], clock: _Clock) -> list[Any]:
    """``findings``: every finding as markdown."""
    text = render_findings(findings)
    return [_event(_text("findings", text, "What tftrace found, worst first."), 0, clock.start_s)]


def about_events(analysis: Analysis, clock: _Clock, resolution_ns: int) -> list[Any]:
    """``about``: what was analysed and how to read the axes (a line that may name something of
    the run's, a path or a function, through ``markdown_text``: shown, never markup)."""
    warmup, cost = warmup_line(analysis), profiler_cost_line(analysis)
    said = [
        window_line(analysis),
        *([warmup] if warmup else []),
        *([cost] if cost else []),
        *requests_text.summary_lines(analysis),
        *headline(analysis),
    ]
    lines = [
        f"**run** {md(analysis.run.path)}",
        "",
        f"- analysed {md(said[0])}",
        *(f"- {md(line)}" for line in said[1:]),
        f"- concurrency bins: {resolution_ns / MS:g} ms; step = ms since the recorder started, "
        "wall time = when it happened",
        "- steps/*: one point per step (step = step number); the whole window's figures "
        "are the text `figures`, and the Thread pools tab shows them all",
        *(f"- missing: {md(line)}" for line in analysis.run.missing),
    ]
    return [_event(_text("about", "\n".join(lines), "The run analysed."), 0, clock.start_s)]


def render_findings(findings: Iterable[Finding]) -> str:
    """Markdown list of findings: severity, id, pool, message, action. The texts name things of
    the run (a process, a library): each goes through ``markdown_text``."""
    items = []
    for f in findings:
        pool_text = f" ({md(f.pool)})" if f.pool else ""
        item = f"- **{f.severity.value}** `{f.id}`{pool_text}: {md(f.message)}"
        if f.consequence_of:
            item += f" *(a consequence of {md(', '.join(f.consequence_of))})*"
        if f.action:
            item += f"\n  *Action:* {md(f.action)}"
        if f.verification:
            item += f"\n  *Verified:* {f.verification.status.value}: {md(f.verification.reason)}"
        items.append(item)
    return "\n".join(items) if items else "No findings."


def slug(name: str) -> str:
    """A tag component from a label: ``python / host`` -> ``python_host`` (no spaces or '/')."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", name.strip()).strip("_") or "_"


# --- protos -----------------------------------------------------------------------------------


def _event(summary: Any, step: int, wall_s: float) -> Any:
    return event_pb2.Event(wall_time=wall_s, step=step, summary=summary)


def _maybe_scalar(tag: str, value: Any, description: str | None) -> list[Any]:
    """A scalar summary, or none for a missing figure (None / NaN): TensorBoard has no gaps."""
    return [summary_pb2.Summary(value=[v]) for v in _maybe_value(tag, value, description)]


def _maybe_value(tag: str, value: Any, description: str | None) -> list[Any]:
    """A scalar's summary value, or none for a missing figure (None / NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return [_scalar_value(tag, float(value), description)]


def _scalar(tag: str, value: float, description: str | None) -> Any:
    """A scalar as TensorFlow 2 writes it: a float32 tensor with the scalars plugin's metadata
    (the metadata only where given: TensorBoard reads it from a tag's first point)."""
    return summary_pb2.Summary(value=[_scalar_value(tag, value, description)])


def _scalar_value(tag: str, value: float, description: str | None) -> Any:
    # The tensor built directly: tensor_util.make_tensor_proto writes the same bytes, at 10x
    # the cost (a long training has thousands of points).
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_FLOAT, float_val=[value], tensor_shape=_SCALAR
    )
    value_pb = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
    if description is not None:
        value_pb.metadata.CopyFrom(scalar_metadata.create_summary_metadata(tag, description))
    return value_pb


def _image(tag: str, png: bytes, description: str) -> Any:
    """An image as TensorFlow 2 writes it: a string tensor [width, height, png]."""
    width, height = png_size(png)
    tensor = tensor_util.make_tensor_proto(
        [str(width).encode(), str(height).encode(), bytes(png)], dtype="string"
    )
    metadata = image_metadata.create_summary_metadata(tag, description)
    return summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=metadata)]
    )


def _text(tag: str, markdown: str, description: str) -> Any:
    tensor = tensor_util.make_tensor_proto(markdown.encode(), dtype="string")
    metadata = text_metadata.create_summary_metadata(tag, description)
    return summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=metadata)]
    )


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; ValueError when the bytes are not a PNG."""
    if len(png) < 24 or not png.startswith(PNG_SIGNATURE) or png[12:16] != b"IHDR":
        raise ValueError("image is not a PNG")
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


# --- the file ---------------------------------------------------------------------------------


def _replace_event_files(directory: Path, events: list[Any], start_s: float) -> Path:
    """Remove earlier event files (only those) and write ``events`` into a new one."""
    safe_dir(directory)  # RUN/tftrace: a link there is refused, before anything is removed
    for old in directory.glob(EVENT_FILE_GLOB):
        old.unlink()
    path = directory / (
        f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.tftrace"
    )
    header = event_pb2.Event(
        wall_time=start_s,
        file_version="brain.Event:2",
        source_metadata=event_pb2.SourceMetadata(writer="tftrace"),
    )
    with atomic_output(path) as f:
        f.write(b"".join(_record(e.SerializeToString()) for e in (header, *events)))
    return path


def _record(data: bytes) -> bytes:
    """TFRecord framing: length, its masked CRC-32C, the data, its masked CRC-32C (as
    tensorboard's RecordWriter writes it, with a C CRC-32C in place of its Python one)."""
    length = struct.pack("<Q", len(data))
    return b"".join(
        (length, struct.pack("<I", _masked_crc(length)), data, struct.pack("<I", _masked_crc(data)))
    )


def _masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
