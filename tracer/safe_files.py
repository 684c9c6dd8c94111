"""Every file tftrace writes, written without following a symbolic link someone else planted.

A run directory may be shared, and whoever shares it may have left links in it:
``RUN/report.html -> ~/.ssh/authorized_keys``, ``RUN/export -> /somewhere``. So:

- a file is written to a temporary file beside it (``O_CREAT | O_EXCL | O_NOFOLLOW``: never an
  existing file, never through a link) and renamed into place (``os.replace``): the rename
  replaces a link at the destination with the file itself and writes nothing through it. A
  reader sees the old file or the new one, never half a file;
- the folder a file goes into must not be a link (``UnsafePathError``, one line):
  ``RUN/report.html`` is not written when ``RUN`` is one, nor ``-o DIR/x`` when ``DIR`` is;
- a folder tftrace makes (``RUN/export/csv``, ``RUN/report_files``, ``-o DIR``) is made one
  level at a time below its root (the run directory, or the given folder's parent), and a level
  that exists as a link is refused (``safe_dir``). Above the root the path is the user's choice;
- a stream the recorder opens in a run directory it has just created (the workload's output,
  the py-spy log) must be a new file (``open_new``).

The lowest layer: tftrace.tracer code runs it inside the workload, so it imports nothing of
tftrace but its errors.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from tftrace.errors import TftraceError

FILE_MODE = 0o644  # before the umask, as open() would give, less group/other write
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# A temporary file's name: hidden, and nothing a reader looks for (a run's *.json, *.npz, *.pb;
# TensorBoard reads any name holding "tfevents", so the destination's name is not in it).
TEMP_PREFIX = ".tftrace-"
TEMP_SUFFIX = ".tmp"
_TEMP_TRIES = 16

PathLike = str | os.PathLike[str]


class UnsafePathError(TftraceError, OSError):
    """A destination tftrace will not write into: a symbolic link where a directory should be.

    The message is the whole line the user sees (``refusing to write into RUN/export: it is a
    symbolic link``). It is an ``OSError`` too (``errno`` ELOOP, ``filename`` the link), so code
    that already treats a file it cannot write as such (a cache kept in memory only, a source
    that did not start) does the same here; the command line prints it as one line, exit 2.
    """

    def __init__(self, path: PathLike, why: str = "it is a symbolic link") -> None:
        super().__init__(errno.ELOOP, why, os.fspath(path))
        self.args = (f"refusing to write into {os.fspath(path)}: {why}",)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:  # across processes (a host's report in a worker)
        return (_rebuilt, (str(self), self.filename, self.strerror))


def _rebuilt(message: str, filename: str, why: str) -> UnsafePathError:
    error = UnsafePathError(filename, why)
    error.args = (message,)  # as error_context may have prefixed it
    return error


def refuse_link(path: PathLike) -> None:
    """Raise ``UnsafePathError`` when ``path`` is a symbolic link (a missing path is fine)."""
    if os.path.islink(path):
        raise UnsafePathError(path)


def safe_dir(path: PathLike, *, root: PathLike | None = None, create: bool = True) -> Path:
    """The directory ``path``, made (with what is missing of ``root``) unless ``create`` is
    false; ``path`` and every directory between ``root`` and it must not be a symbolic link.

    ``root`` is an output root the user chose (the run directory for ``RUN/export/csv``), not
    checked itself; by default ``path``'s parent, so that only ``path`` is checked: ``-o DIR``
    refuses a ``DIR`` that is a link. Each missing directory is made with ``mkdir`` (which
    never follows a link), then looked at without following one. Raises ``UnsafePathError``
    for a link, ``NotADirectoryError`` for something else that is not a directory.
    """
    path = Path(path)
    base = path.parent if root is None else Path(root)
    if create and not base.is_dir():
        base.mkdir(parents=True, exist_ok=True)
    current = base
    for part in path.relative_to(base).parts:
        current = current / part
        if create:
            with suppress(FileExistsError):
                os.mkdir(current)
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            if create:
                raise
            return path  # create=False: nothing below a missing directory can be a link
        if stat.S_ISLNK(info.st_mode):
            raise UnsafePathError(current)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(current))
    return path


def _parent(path: Path) -> Path:
    parent = path.parent
    refuse_link(parent)
    return parent


def _new_temp(path: Path, mode: int) -> tuple[int, Path]:
    """A new temporary file beside ``path``, open for writing: (descriptor, its path)."""
    parent = _parent(path)
    for _ in range(_TEMP_TRIES):
        tmp = parent / f"{TEMP_PREFIX}{os.urandom(6).hex()}{TEMP_SUFFIX}"
        try:
            return os.open(tmp, NEW_FILE_FLAGS, mode), tmp
        except FileExistsError:
            continue  # someone's file of that name (or a link): never touched, try another
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


@contextmanager
def atomic_output(
    path: PathLike,
    mode: str = "wb",
    *,
    encoding: str | None = None,
    file_mode: int = FILE_MODE,
    fsync: bool = False,
) -> Iterator[IO[Any]]:
    """A file object to write ``path``'s new content into (``mode`` "wb", or "w": text in
    ``encoding``, UTF-8 by default); when the block ends without an error, the file replaces
    ``path`` (a link there included, which is replaced, not followed). On an error the
    temporary file is removed and ``path`` is left as it was. For writers that stream: gzip,
    ``savefig(f)``, ``to_parquet(f)``, ``np.savez(f)``.

    A writer may close the file itself (some do): it is renamed all the same.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_output writes a new file: mode 'wb' or 'w', not {mode!r}")
    dest = Path(path)
    fd, tmp = _new_temp(dest, file_mode)
    try:
        f = os.fdopen(fd, mode, encoding=(encoding or "utf-8") if mode == "w" else None)
    except BaseException:
        os.close(fd)
        _remove(tmp)
        raise
    try:
        with f:
            yield f
            if not f.closed:
                f.flush()
                if fsync:
                    os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        _remove(tmp)
        raise


def _remove(tmp: Path) -> None:
    with suppress(OSError):
        os.unlink(tmp)


def write_bytes_atomic(path: PathLike, data: bytes | bytearray | memoryview, **how: Any) -> None:
    """Replace ``path`` with ``data`` (see ``atomic_output``; ``how``: its keywords)."""
    with atomic_output(path, "wb", **how) as f:
        f.write(data)


def write_text_atomic(path: PathLike, text: str, encoding: str = "utf-8", **how: Any) -> None:
    """Replace ``path`` with ``text`` in ``encoding`` (see ``atomic_output``)."""
    write_bytes_atomic(path, text.encode(encoding), **how)


def open_new(path: PathLike, mode: str = "wb", *, file_mode: int = FILE_MODE) -> IO[Any]:
    """``path`` as a new file open for writing (a stream: a log written as it comes), in a
    directory that is not a link; ``FileExistsError`` when anything is there already, a link
    included (nothing is renamed: the recorder made the directory, empty, itself)."""
    if mode not in ("wb", "w"):
        raise ValueError(f"open_new opens a new file: mode 'wb' or 'w', not {mode!r}")
    dest = Path(path)
    _parent(dest)
    fd = os.open(dest, NEW_FILE_FLAGS, file_mode)
    try:
        return os.fdopen(fd, mode, encoding="utf-8" if mode == "w" else None)
    except BaseException:
        os.close(fd)
        raise
