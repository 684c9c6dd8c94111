"""A run's DataFrames as files other tools read: one CSV or Parquet file per table.

Why: the tables of ``analysis/model/run.py`` are the whole of what tftrace knows about a run,
and a notebook, a database or a spreadsheet should not need tftrace (nor TensorFlow) to
read them. The per-step table (``steps``: every step of the trace with its breakdown) goes with
them: it is computed, but a long training has too many steps for a report to list. So does a
server's ``requests`` table (each request of the analysed window with its latency and where
its time went, ``metrics/requests.py``), only for a server; ``schema.json`` says which window
and why.
Beside the tables goes ``schema.json``, the column contract of
``analysis/schema.py`` (name, dtype and meaning of every column, row counts), so a reader
can restore the exact dtypes: CSV has none, and Parquet keeps them but not the meaning.

- CSV (written by pyarrow): UTF-8, a header row, no index; every value is quoted and a
  missing one is an empty, *unquoted* field. That is PostgreSQL's and DuckDB's convention,
  and it keeps an empty string (``""``: threads with an empty OS name exist) apart from a
  missing value, which a bare empty field cannot. Any CSV reader reads the files; to get
  the empty strings back too, read with pyarrow (``CSV_READ_OPTIONS``) or ``read_tables``.
  Text is the run's (op and thread names): a value a spreadsheet would run as a formula
  (beginning with = + - @, a tab or CR) is written with a leading ``'`` (``csv_cell``), as
  is one that begins with ``'`` itself; ``read_tables`` takes it off again.
- Parquet (pyarrow): dtypes survive, categoricals as dictionary columns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from tftrace.analysis.export.figures import TraceFigures
from tftrace.analysis.model.schema import DERIVED_TABLES, REQUESTS, STEPS, TABLES
from tftrace.analysis.render.formatting import csv_cells, from_csv_cells
from tftrace.tracer.safe_files import atomic_output, safe_dir, write_text_atomic
from tftrace.version import __version__

if TYPE_CHECKING:
    from tftrace.analysis.export.request_slices import WindowRequests

FORMATS = ("csv", "parquet")
EXPORTED = {**TABLES, **DERIVED_TABLES}
SCHEMA_FILE = "schema.json"
TIME_UNIT = "ns"


def table_frames(
    figures: TraceFigures, server: WindowRequests | None = None
) -> dict[str, pd.DataFrame]:
    """Every table of the figures' run by its schema name, in the schema's order, then the
    computed ones (``DERIVED_TABLES``: the steps of the whole trace; a ``server``'s requests)."""
    frames = {name: getattr(figures.run, name) for name in TABLES}
    frames[STEPS.name] = figures.steps.table.astype(STEPS.columns)
    if server is not None:
        frames[REQUESTS.name] = server.requests.table[list(REQUESTS.columns)].astype(
            REQUESTS.columns
        )
    return frames


def exported(server: WindowRequests | None = None) -> dict[str, Any]:
    """The tables written: ``EXPORTED``, and a server's requests."""
    return EXPORTED if server is None else {**EXPORTED, REQUESTS.name: REQUESTS}


def column_contract(
    figures: TraceFigures, fmt: str, server: WindowRequests | None = None
) -> dict[str, Any]:
    """What ``schema.json`` holds: the files, their columns and dtypes, and the run (and for
    a server, the window its requests were counted over, and why)."""
    run = figures.run
    frames = table_frames(figures, server)
    contract: dict[str, Any] = {
        "producer": f"tftrace {__version__}",
        "format": fmt,
        "run": str(run.path),
        "time_unit": TIME_UNIT,
        "time_axis": "ns since the recorder started (since the profiler started for a bare trace)",
        "missing": list(run.missing),
        "tables": {
            name: {
                "file": f"{name}.{fmt}",
                "rows": len(frames[name]),
                "doc": table.doc,
                "columns": dict(table.columns),
            }
            for name, table in exported(server).items()
        },
    }
    if server is not None:
        lo, hi = server.requests.window
        contract["tables"][REQUESTS.name]["window"] = {
            "start_ns": lo,
            "end_ns": hi,
            "seconds": server.requests.seconds,
            "basis": server.basis,
        }
    if fmt == "csv":
        contract["csv"] = {
            "encoding": "utf-8",
            "header": True,
            "quoting": "every value quoted; a missing value is an empty unquoted field",
            "text": "a value beginning with = + - @ ' a tab or CR has a ' put before it "
            "(a spreadsheet would run it as a formula); drop that first ' when reading",
        }
    return contract


# pyarrow's types for the schema's dtypes when reading CSV (text first; cast after).
ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "Int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "category": pa.string(),
    "object": pa.string(),
}
# Quoted "" is an empty string, an unquoted empty field is missing.
CSV_READ_OPTIONS = {"strings_can_be_null": True, "quoted_strings_can_be_null": False}


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    # text a spreadsheet would run as a formula (=, +, -, @...) gets a leading ' (csv_cell)
    table = pa.Table.from_pandas(csv_cells(frame), preserve_index=False)
    with atomic_output(path) as f:
        pa_csv.write_csv(table, f, write_options=pa_csv.WriteOptions(quoting_style="all_valid"))


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    with atomic_output(path) as f:
        frame.reset_index(drop=True).to_parquet(f, index=False, engine="pyarrow")


WRITERS: dict[str, Callable[[pd.DataFrame, Path], None]] = {
    "csv": _write_csv,
    "parquet": _write_parquet,
}


def write_tables(
    figures: TraceFigures, directory: Path, fmt: str, server: WindowRequests | None = None
) -> list[Path]:
    """Write each table (a ``server``'s requests too, where given) and ``schema.json`` into
    ``directory`` (created); the paths written.

    Existing files of the same names are replaced; nothing else in the directory is touched.
    """
    if fmt not in WRITERS:
        raise ValueError(f"unknown table format {fmt!r} (have: {', '.join(FORMATS)})")
    safe_dir(directory)
    written = []
    for name, frame in table_frames(figures, server).items():
        path = directory / f"{name}.{fmt}"
        WRITERS[fmt](frame, path)
        written.append(path)
    schema = directory / SCHEMA_FILE
    contract = column_contract(figures, fmt, server)
    write_text_atomic(schema, json.dumps(contract, indent=2) + "\n")
    written.append(schema)
    return written


def read_tables(directory: Path) -> dict[str, pd.DataFrame]:
    """Read a directory ``write_tables`` wrote, with the dtypes its ``schema.json`` declares."""
    contract = json.loads((directory / SCHEMA_FILE).read_text(encoding="utf-8"))
    fmt = contract["format"]
    out = {}
    for name, table in contract["tables"].items():
        path = directory / table["file"]
        columns: dict[str, str] = table["columns"]
        if fmt == "csv":
            frame = read_csv_table(path, columns)
        else:
            frame = pd.read_parquet(path, engine="pyarrow")
        out[name] = frame.astype(columns)
    return out


def read_csv_table(path: Path, columns: dict[str, str]) -> pd.DataFrame:
    """One CSV table with its declared dtypes, empty strings and missing values apart."""
    options = pa_csv.ConvertOptions(
        column_types={c: ARROW_TYPES[d] for c, d in columns.items()}, **CSV_READ_OPTIONS
    )
    table = pa_csv.read_csv(path, convert_options=options)
    # Nullable Int64 straight from Arrow: through float64, 64-bit ids would lose digits.
    frame = table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    return from_csv_cells(frame).astype(columns)
