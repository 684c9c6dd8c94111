"""Every file of a run directory, read without trusting it.

A run directory travels (shared, downloaded from a bug report), so what is in it may be
anything: a FIFO named ``manifest.json`` (an ``open()`` that never returns), a link to
``/dev/zero`` (a file of size 0 that never ends), JSON of the wrong shape or nested 200,000
deep, an ``.npz`` whose columns disagree or that decompresses to terabytes. The readers here:

- open without following a link and without blocking (``O_NOFOLLOW | O_NONBLOCK``), then
  ``fstat`` the open file and refuse all but a regular file;
- read at most the file's size as ``fstat`` gave it, and refuse a file over the caller's limit
  (the memory check, ``analysis.model.memory``) before reading a byte;
- turn every malformed content into ``UnreadableFile``: a ``TraceError`` whose message is the
  one line the user sees, naming the file and saying why. ``FileAbsent`` (a subclass) is a
  file that is not there, which most callers treat as "not recorded".

The lowest layer, like ``safe_files``: it imports nothing of tftrace but its errors, and numpy
only inside the function that needs it.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tftrace.errors import TraceError

PathLike = str | os.PathLike[str]
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
# No file tftrace writes as JSON comes near this; a larger one is not a run's (a py-spy trace
# is read with the memory check's limit instead).
MAX_JSON_BYTES = 256 * 2**20
# The recorder's JSON nests a few levels (the manifest: 5); deeper is not a run's, and code
# that walks it (a deep copy, json.dumps) must not run out of stack.
MAX_DEPTH = 64
INT64 = (-(2**63), 2**63 - 1)
# Shapes (``shape_error``): a type, None, ``Between``, a tuple (any of), [shape] (a list of),
# or a dict of shapes by key ("key?": may be absent); ``int`` is an int64, ``float`` any finite
# number.
Shape = Any


@dataclass(frozen=True)
class Between:
    """A shape: a number from ``lo`` to ``hi``, a whole one when ``whole``."""

    lo: float
    hi: float
    whole: bool = True

    def holds(self, value: Any) -> bool:
        kinds = (int,) if self.whole else (int, float)
        return type(value) in kinds and self.lo <= value <= self.hi  # NaN: False

    def __str__(self) -> str:
        return f"{'an integer' if self.whole else 'a number'} from {self.lo} to {self.hi}"


class UnreadableFile(TraceError):
    """A file of a run that is not what it should be; the message names it and says why
    (``reason``: the why alone, for a note that names the file its own way)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class FileAbsent(UnreadableFile):
    """The file is not there."""


def _refuse(path: PathLike, reason: str, kind: type[UnreadableFile] = UnreadableFile) -> Any:
    return kind(f"{os.fspath(path)}: {reason}", reason)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


def read_regular_bytes(
    path: PathLike, limit: int | None = None, check: Callable[[Path, int], None] | None = None
) -> bytes:
    """The bytes of the regular file ``path``: at most its size when opened, and none when
    that size is over ``limit`` (``check(path, size)``, when given, may raise too: the memory
    check). A link, FIFO, device or directory is refused, and nothing blocks."""
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        raise _refuse(path, "no such file", FileAbsent) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _refuse(path, "a symbolic link (not followed in a run directory)") from None
        raise _refuse(path, f"cannot read ({e.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, f"{_kind(info.st_mode)}, not a regular file")
        size = info.st_size
        if limit is not None and size > limit:
            raise _refuse(path, f"{size} bytes, more than the {limit} it may have")
        if check is not None:
            check(Path(path), size)
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(size)
    except OSError as e:
        raise _refuse(path, f"cannot read ({e.strerror})") from None
    finally:
        os.close(fd)


def parse_json(data: bytes, path: PathLike, shape: Shape = object) -> Any:
    """``data`` (the file ``path``) as JSON of ``shape``, nested at most ``MAX_DEPTH`` deep."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise _refuse(path, "not readable JSON (nested too deeply)") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise _refuse(path, f"not readable JSON ({_one_line(str(e))})") from None
    if too_deep(value):
        raise _refuse(path, f"not readable JSON (nested over {MAX_DEPTH} deep)")
    problem = shape_error(value, shape)
    if problem is not None:
        raise _refuse(path, f"not what tftrace writes ({problem})")
    return value


def read_json(path: PathLike, shape: Shape = object, limit: int | None = MAX_JSON_BYTES) -> Any:
    """The JSON file ``path``, of ``shape`` (see ``shape_error``); ``UnreadableFile`` when it
    is not a regular file, is over ``limit`` bytes, is not JSON or not of that shape."""
    return parse_json(read_regular_bytes(path, limit), path, shape)


def read_json_object_or_none(path: PathLike, shape: Shape = dict) -> dict[str, Any] | None:
    """The JSON object at ``path``, or None when it is absent or unreadable in any way."""
    try:
        data = read_json(path, shape)
    except TraceError:
        return None
    return data if isinstance(data, dict) else None


def too_deep(value: Any, most: int = MAX_DEPTH) -> bool:
    """Whether lists and objects nest in ``value`` more than ``most`` deep (no recursion)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        item, depth = stack.pop()
        if depth > most:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    return _NAMES.get(type(value), type(value).__name__)


def _matches(value: Any, shape: Any) -> bool:
    if isinstance(shape, Between):
        return shape.holds(value)
    if shape is None:
        return value is None
    if shape is object:
        return True
    if shape is int:
        return type(value) is int and INT64[0] <= value <= INT64[1]
    if shape is float:
        return type(value) in (int, float) and math.isfinite(value)
    return isinstance(value, shape) and not (shape is not bool and isinstance(value, bool))


def _describe(shape: Shape) -> str:
    if isinstance(shape, tuple):
        return " or ".join(_describe(s) for s in shape)
    if isinstance(shape, list):
        return "a list"
    if isinstance(shape, dict) or shape is dict:
        return "an object"
    if shape is list:
        return "a list"
    if shape is None:
        return "null"
    if isinstance(shape, Between):
        return str(shape)
    return _NAMES.get(shape, getattr(shape, "__name__", str(shape)))


def shape_error(value: Any, shape: Shape, where: str = "") -> str | None:
    """Where ``value`` is not of ``shape`` and why (``threads[3].tid: expected an integer,
    found a string``), or None when it is. ``shape``: a type (``int``: an int64, ``float``: a
    finite number, ``object``: anything), None, a tuple of shapes (any of), ``[item shape]``
    or ``{key: shape}`` (a key ending in ``?`` may be absent; other keys may be present)."""
    if isinstance(shape, tuple):
        if any(shape_error(value, s, where) is None for s in shape):
            return None
        return f"{where or 'the file'}: expected {_describe(shape)}, found {_type_name(value)}"
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where or 'the file'}: expected a list, found {_type_name(value)}"
        (item,) = shape
        if item is object:
            return None
        for i, entry in enumerate(value):
            problem = shape_error(entry, item, f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where or 'the file'}: expected an object, found {_type_name(value)}"
        for key, inner in shape.items():
            name = key.removesuffix("?")
            path = f"{where}.{name}" if where else name
            if name not in value:
                if key.endswith("?"):
                    continue
                return f"{path}: missing"
            problem = shape_error(value[name], inner, path)
            if problem is not None:
                return problem
        return None
    if _matches(value, shape):
        return None
    return f"{where or 'the file'}: expected {_describe(shape)}, found {_type_name(value)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def read_npz_columns(
    path: PathLike, groups: Sequence[Sequence[str]], limit: int | None = None
) -> dict[str, Any]:
    """The columns of the ``.npz`` file ``path`` that ``groups`` name, each a 1-d array of
    integers (or booleans), the columns of each group of one length; ``UnreadableFile`` when
    the file is not such a zip of ``.npy`` arrays (pickled objects are never loaded), or would
    take more than ``limit`` bytes once unpacked."""
    import zipfile

    data = read_regular_bytes(path, limit)
    out: dict[str, Any] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = 0
            for group in groups:
                for name in group:
                    try:
                        info = archive.getinfo(f"{name}.npy")
                    except KeyError:
                        raise _refuse(path, f"no column {name!r}") from None
                    unpacked += info.file_size
                    if limit is not None and unpacked > limit:
                        raise _refuse(path, f"unpacks to more than {limit} bytes")
                    with archive.open(info) as member:
                        out[name] = _npy_column(member, info.file_size, path, name)
                lengths = {len(out[name]) for name in group}
                if len(lengths) > 1:
                    sizes = ", ".join(map(str, sorted(lengths)))
                    raise _refuse(path, f"columns {', '.join(group)} differ in length ({sizes})")
    except (UnreadableFile, MemoryError):
        raise
    except Exception as e:  # zip, zlib, lzma, header parsing: all malformed input
        kind = type(e).__name__
        raise UnreadableFile(f"{os.fspath(path)}: not a readable .npz ({kind})", kind) from None
    return out


def _npy_column(member: Any, size: int, path: PathLike, name: str) -> Any:
    """One ``.npy`` member: its header checked (1-d, integers) before its data is read."""
    import numpy as np
    from numpy.lib import format as npy

    version = npy.read_magic(member)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, _, dtype = npy.read_array_header_2_0(member)
    else:
        raise _refuse(path, f"{name}: .npy version {version} not read")
    if len(shape) != 1 or dtype.hasobject or dtype.fields or dtype.kind not in "biu":
        raise _refuse(path, f"{name}: not a column of integers ({dtype}, shape {shape})")
    nbytes = shape[0] * dtype.itemsize
    raw = member.read(nbytes) if nbytes <= size else b""
    if len(raw) != nbytes:
        raise _refuse(path, f"{name}: holds less than its header says")
    return np.frombuffer(bytearray(raw), dtype=dtype)
