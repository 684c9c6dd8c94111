"""Every file tftrace writes goes through ``tracer/safe_files.py``: a link planted where a file
goes is replaced, never written through; a linked directory is refused in one line. The module
on its own, then ``tftrace report``, ``tftrace export`` and the TensorBoard tab on a copy of
the sample run in which someone planted links."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import SAMPLE_RUN, tftrace
from tftrace.errors import TftraceError, error_context
from tftrace.tracer import rundir
from tftrace.tracer.safe_files import (
    TEMP_PREFIX,
    UnsafePathError,
    atomic_output,
    open_new,
    refuse_link,
    safe_dir,
    write_bytes_atomic,
    write_text_atomic,
)

KEEP = "someone else's file\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory that is not the tool's to write: what planted links point at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim").write_text(KEEP)
    return folder


def untouched(outside: Path) -> bool:
    return [p.name for p in outside.iterdir()] == ["victim"] and (
        outside / "victim"
    ).read_text() == KEEP


def temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]


def one_line_refusal(text: str, name: str) -> bool:
    return text.count("\n") <= 1 and name in text and "symbolic link" in text


# --- the module -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda p: write_text_atomic(p, "new\n"),
        lambda p: write_bytes_atomic(p, b"new\n"),
        lambda p: rundir.write_json_atomic(p, "new"),
    ],
    ids=["text", "bytes", "json"],
)
def test_a_link_at_the_destination_is_replaced_not_followed(tmp_path, outside, write):
    dest = tmp_path / "report.html"
    dest.symlink_to(outside / "victim")
    write(dest)
    assert not dest.is_symlink() and dest.is_file() and "new" in dest.read_text()
    assert untouched(outside) and not temporaries(tmp_path)


def test_a_stream_replaces_a_link_too(tmp_path, outside):
    dest = tmp_path / "samples.npz"
    dest.symlink_to(outside / "victim")
    rundir.write_npz_atomic(dest, {"a": np.arange(3)})
    assert not dest.is_symlink() and np.load(dest)["a"].tolist() == [0, 1, 2]
    text = tmp_path / "plugin.json"
    text.symlink_to(outside / "victim")
    with atomic_output(text, "w") as f:
        json.dump({"k": 1}, f)
    assert json.loads(text.read_text()) == {"k": 1} and untouched(outside)


def test_an_existing_file_is_replaced_with_the_new_content(tmp_path):
    dest = tmp_path / "a.json"
    dest.write_text("old")
    os.chmod(dest, 0o600)
    write_text_atomic(dest, "new")
    assert dest.read_text() == "new" and not temporaries(tmp_path)


def test_a_linked_parent_directory_is_refused_in_one_line(tmp_path, outside):
    linked = tmp_path / "report_files"
    linked.symlink_to(outside)
    for write in (
        lambda: write_bytes_atomic(linked / "concurrency.png", b"png"),
        lambda: open_new(linked / "stdout.log"),
        lambda: atomic_output(linked / "x.csv").__enter__(),
    ):
        with pytest.raises(UnsafePathError) as caught:
            write()
        assert str(caught.value) == f"refusing to write into {linked}: it is a symbolic link"
    error = caught.value
    # the command line's one-line errors, and what code that handles unwritable files catches
    assert isinstance(error, TftraceError) and isinstance(error, OSError)
    assert error.filename == str(linked) and error.strerror == "it is a symbolic link"
    assert untouched(outside)


def test_the_error_keeps_its_line_across_processes_and_prefixes():
    with pytest.raises(UnsafePathError) as caught, error_context("sweep"):
        raise UnsafePathError("RUN/verify")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (
        str(again)
        == str(caught.value)
        == ("sweep: refusing to write into RUN/verify: it is a symbolic link")
    )
    assert again.filename == "RUN/verify"


def test_the_temporary_file_is_removed_on_an_error(tmp_path):
    dest = tmp_path / "trace.json"
    dest.write_text("before")
    with pytest.raises(RuntimeError), atomic_output(dest) as f:
        f.write(b"half")
        raise RuntimeError("the writer failed")
    assert dest.read_text() == "before" and not temporaries(tmp_path)
    # the rename itself fails (a directory where the file goes): nothing left behind either
    (tmp_path / "csv").mkdir()
    with pytest.raises(OSError):
        write_bytes_atomic(tmp_path / "csv", b"x")
    assert not temporaries(tmp_path)
    with pytest.raises(ValueError):
        atomic_output(dest, "ab").__enter__()


def test_a_writer_that_closes_the_file_itself_is_renamed_all_the_same(tmp_path):
    dest = tmp_path / "a.csv"
    with atomic_output(dest) as f:
        f.write(b"x,y\n")
        f.close()
    assert dest.read_bytes() == b"x,y\n"


def test_a_planted_temporary_name_is_skipped_not_written(tmp_path, outside, monkeypatch):
    planted = tmp_path / f"{TEMP_PREFIX}{'00' * 6}.tmp"
    planted.symlink_to(outside / "victim")
    draws = iter([b"\0" * 6, b"\1" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    write_text_atomic(tmp_path / "a.json", "new")
    assert planted.is_symlink() and untouched(outside)
    assert (tmp_path / "a.json").read_text() == "new"


def test_safe_dir_makes_directories_and_refuses_a_linked_one(tmp_path, outside):
    run = tmp_path / "run"
    made = safe_dir(run / "export" / "csv", root=run)
    assert made.is_dir() and not made.is_symlink()
    (run / "tftrace").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="tftrace: it is a symbolic link"):
        safe_dir(run / "tftrace")
    with pytest.raises(UnsafePathError, match="tftrace: it is a symbolic link"):
        safe_dir(run / "tftrace" / "deeper", root=run)
    with pytest.raises(UnsafePathError):
        safe_dir(run / "tftrace", create=False)
    # checking only: nothing is made, a missing folder is fine
    assert safe_dir(run / "new" / "sub", root=run, create=False) and not (run / "new").exists()
    # a file where a folder goes
    (run / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        safe_dir(run / "file" / "sub", root=run)
    # the root is the user's choice: a link there is followed
    (tmp_path / "runs").symlink_to(outside)
    assert safe_dir(tmp_path / "runs" / "new", root=tmp_path / "runs").is_dir()
    refuse_link(tmp_path / "missing")  # nothing there: nothing refused
    (outside / "new").rmdir()
    assert untouched(outside)


def test_open_new_never_opens_an_existing_file_or_link(tmp_path, outside):
    log = tmp_path / "pyspy.log"
    log.symlink_to(outside / "victim")
    with pytest.raises(FileExistsError):
        open_new(log)
    fresh = tmp_path / "stdout.log"
    with open_new(fresh) as f:
        f.write(b"hello")
    assert fresh.read_bytes() == b"hello" and untouched(outside)


def test_a_run_directory_that_is_a_link_is_refused(tmp_path, outside):
    (outside / "victim").unlink()
    linked = tmp_path / "run"
    linked.symlink_to(outside)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        rundir.create(linked)
    assert not any(outside.iterdir())
    made = rundir.create(tmp_path / "fresh")
    assert (made.path / "workload").is_dir() and (made.path / "os_threads").is_dir()


# --- the commands on a run with planted links -----------------------------------------------


@pytest.fixture
def planted(tmp_path: Path, outside: Path) -> Path:
    """A copy of the sample run, as someone sharing it might leave it: report.html a link to a
    file outside, export and tftrace links to a folder outside."""
    run = Path(shutil.copytree(SAMPLE_RUN, tmp_path / "run"))
    (run / "report.html").symlink_to(outside / "victim")
    (run / "export").symlink_to(outside)
    (run / "tftrace").symlink_to(outside)
    return run


def test_report_replaces_a_linked_page_and_export_refuses_a_linked_folder(planted, outside):
    report = tftrace("report", planted)
    assert report.returncode == 0, report.stderr
    page = planted / "report.html"
    assert not page.is_symlink() and "<html" in page.read_text().lower()
    assert (planted / "report_files").is_dir() and not (planted / "report_files").is_symlink()
    assert untouched(outside) and not temporaries(planted)

    for fmt in ("csv", "perfetto"):
        export = tftrace("export", planted, "--format", fmt)
        assert export.returncode == 2, export.stderr
        assert one_line_refusal(export.stderr, str(planted / "export")), export.stderr
        assert untouched(outside)


def test_report_refuses_a_linked_figures_folder(tmp_path, outside):
    run = Path(shutil.copytree(SAMPLE_RUN, tmp_path / "run"))
    (run / "report_files").symlink_to(outside)
    proc = tftrace("report", run)
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_line_refusal(proc.stderr, str(run / "report_files")), proc.stderr
    assert untouched(outside) and not (run / "report.html").exists()


def test_export_refuses_an_output_directory_that_is_a_link(tmp_path, outside):
    linked = tmp_path / "tables"
    linked.symlink_to(outside)
    proc = tftrace("export", SAMPLE_RUN, "--format", "csv", "-o", linked)
    assert proc.returncode == 2
    assert one_line_refusal(proc.stderr, str(linked)), proc.stderr
    assert untouched(outside)


def test_the_tensorboard_tab_does_not_write_through_a_linked_folder(planted, outside):
    from tftrace.analysis.analyze import analyze
    from tftrace.analysis.model.run import load
    from tftrace.analysis.render.tensorboard import write_summaries
    from tftrace.analysis.tensorboard_plugin.cache import DashboardCache, store

    # the tab: analysed, kept in memory, nothing written into the folder the link points at
    cache = DashboardCache()
    assert cache.get(planted)["headline"] and cache.get(planted) is cache.get(planted)
    analysis = analyze(load(planted))
    assert store(analysis) is None
    # the summaries (tftrace tensorboard): refused before any old event file is removed
    (outside / "events.out.tfevents.1.host.tftrace").write_bytes(b"theirs")
    with pytest.raises(UnsafePathError, match="tftrace: it is a symbolic link"):
        write_summaries(analysis)
    assert (outside / "events.out.tfevents.1.host.tftrace").read_bytes() == b"theirs"
    (outside / "events.out.tfevents.1.host.tftrace").unlink()
    assert untouched(outside)


def test_diff_html_replaces_a_linked_page_and_refuses_a_linked_folder(tmp_path, outside):
    page = tmp_path / "diff.html"
    page.symlink_to(outside / "victim")
    proc = tftrace("diff", SAMPLE_RUN, SAMPLE_RUN, "--html", page)
    assert proc.returncode == 0, proc.stderr
    assert not page.is_symlink() and "<html" in page.read_text().lower()
    (tmp_path / "pages").symlink_to(outside)
    proc = tftrace("diff", SAMPLE_RUN, SAMPLE_RUN, "--html", tmp_path / "pages" / "diff.html")
    assert proc.returncode == 2
    assert one_line_refusal(proc.stderr, str(tmp_path / "pages")), proc.stderr
    assert untouched(outside)
