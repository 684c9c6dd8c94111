"""Hostile run directories: run directories travel (shared, downloaded from a bug report), so
every command that reads one must survive whatever is in it.

Each case is a copy of the sample run with something planted: a FIFO or a link to /dev/zero
where a file should be, JSON of the wrong shape (a list, nested 200,000 deep, fields of the
wrong type), an ``.npz`` whose columns disagree or hold pickled objects, a damaged trace, names
full of control characters and rich markup. Every command that reads a run is run on it, and
must: end (a hang fails), exit 0 or 2, print no traceback, say an error in one line, print no
escape character, and write nothing outside the run directory and its ``-o``.

The named cases run each command in its own process. The generated ones (many more, marked
slow) run the commands in one process per half of them, through ``tftrace.cli.main``, with an
alarm per command: the same checks, without an interpreter start per command.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import SAMPLE_RUN, quiet_env, tftrace_command

TIMEOUT_S = 60  # a command on the sample run takes about a second
IDENTITY = "thread_identity.json"
THREADS = "os_threads/threads.json"
PYSPY = "pyspy/trace.json"
SAMPLES = "os_threads/samples-00000.npz"
STEPS = "workload/steps.json"  # the step timer's: not in the sample run, planted
JSON_FILES = ("manifest.json", IDENTITY, THREADS, PYSPY, "workload/report.json")
# Control characters and markup, as a process or thread may name itself.
EVIL = (
    "[bold red]x[/]\x1b[31mRED\x1b[0m\x1b]0;title\x07\r\nforged line\x00\x7f\u202e[link=file:///]"
)


def commands(run: Path, out: Path) -> dict[str, list[str | Path]]:
    """Every command that reads a run, writing only under ``out``."""
    return {
        "analyze": ["analyze", run],
        "summary": ["summary", run],
        "threads": ["threads", run],
        "report": ["report", run, "-o", out / "report.html"],
        "export-csv": ["export", run, "--format", "csv", "-o", out / "csv"],
        "export-perfetto": ["export", run, "--format", "perfetto", "-o", out / "trace.json.gz"],
        "diff": ["diff", run, run],
        "predict": ["predict", run],
    }


# --- planting --------------------------------------------------------------------------------


def xplane_of(run: Path) -> Path:
    (xplane,) = run.glob("plugins/profile/*/*.xplane.pb")
    return xplane


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def link(path: Path, target: Path | str) -> None:
    path.unlink()
    path.symlink_to(target)


def read(run: Path, rel: str) -> Any:
    return json.loads((run / rel).read_text())


def write(run: Path, rel: str, data: Any) -> None:
    (run / rel).write_text(json.dumps(data))


def write_text(run: Path, rel: str, text: str) -> None:
    (run / rel).write_text(text)


def deep(n: int = 200_000) -> str:
    return "[" * n + "]" * n


def samples(run: Path) -> dict[str, np.ndarray]:
    with np.load(run / SAMPLES) as data:
        return {k: data[k] for k in data.files}


def save_samples(run: Path, columns: dict[str, Any], allow_pickle: bool = False) -> None:
    with open(run / SAMPLES, "wb") as f:
        np.savez(f, **columns, allow_pickle=allow_pickle)


def mismatched_columns(run: Path) -> None:
    cols = samples(run)
    cols["t_ns"] = cols["t_ns"][:-7]
    save_samples(run, cols)


def object_columns(run: Path) -> None:
    cols = samples(run)
    cols["tid"] = np.array([{"a": 1}] * len(cols["tid"]), dtype=object)
    save_samples(run, cols, allow_pickle=True)


def float_and_2d_columns(run: Path) -> None:
    cols = samples(run)
    cols["t_ns"] = np.full(len(cols["t_ns"]), np.nan)
    cols["cpu"] = np.stack([cols["cpu"], cols["cpu"]], axis=1)
    save_samples(run, cols)


def unknown_tids(run: Path) -> None:
    cols = samples(run)
    cols["tid"] = cols["tid"] + 10_000_000
    save_samples(run, cols)


def wrong_types_manifest(run: Path) -> None:
    data = read(run, "manifest.json")
    for key, value in list(data.items()):
        if key != "kind":
            data[key] = wrong_values(value)[0]
    write(run, "manifest.json", data)


def wrong_types_sources(run: Path) -> None:
    data = read(run, "manifest.json")
    for source in data["sources"].values():
        for key in source:
            source[key] = {"nested": [1, "x"]} if key != "state" else source[key]
    data["pools"] = {"inter_op": {"size": "two"}, "intra_op": [2]}
    data["clock"]["start"] = {"wall_ns": 10**30, "monotonic_ns": -(10**30)}
    write(run, "manifest.json", data)


def wrong_types_entries(rel: str, key: str) -> Callable[[Path], None]:
    def plant(run: Path) -> None:
        data = read(run, rel)
        entries = data[key] if isinstance(data, dict) else data
        for i, entry in enumerate(entries):
            for field in list(entry):
                entry[field] = wrong_values(entry[field])[i % len(wrong_values(entry[field]))]
        write(run, rel, data)

    return plant


def hostile_names(run: Path) -> None:
    manifest = read(run, "manifest.json")
    manifest["name"] = EVIL
    manifest["host"]["hostname"] = EVIL
    manifest["workload_command"] = [EVIL, EVIL]
    manifest["workload"]["exception"] = {"type": EVIL, "message": EVIL}
    manifest["sources"]["pyspy"]["reason"] = EVIL
    write(run, "manifest.json", manifest)
    identity = read(run, IDENTITY)
    for i, thread in enumerate(identity["threads"]):
        thread["python_name" if i % 2 else "tf_name"] = f"{EVIL}{i}"
        thread["comm"] = EVIL[:15]
    write(run, IDENTITY, identity)
    table = read(run, THREADS)
    for thread in table["threads"]:
        thread["name"] = EVIL
    write(run, THREADS, table)
    events = read(run, PYSPY)
    for e in events:
        if e.get("ph") == "B":
            e["name"] = (
                f"thread ({e['name'][8:].split(')')[0]}): {EVIL}"
                if e["name"].startswith("thread (")
                else EVIL
            )
            e["args"] = {"filename": EVIL, "line": EVIL}
    write(run, PYSPY, events)
    hostile_trace_names(run)


def hostile_trace_names(run: Path) -> None:
    from tftrace.analysis.xplane import schema

    xplane = xplane_of(run)
    space = schema.XSpace.FromString(xplane.read_bytes())
    for plane in space.planes:
        for line in plane.lines:
            line.name = f"{EVIL}{line.id}"
            line.display_name = EVIL
        for meta in plane.event_metadata.values():
            meta.name = f"{EVIL}{meta.id}"
            meta.display_name = EVIL
    space.hostnames[:] = [EVIL]
    xplane.write_bytes(space.SerializeToString())


def xplane_dir(run: Path) -> None:
    xplane = xplane_of(run)
    xplane.unlink()
    xplane.mkdir()


def every_file_fifo(run: Path) -> None:
    for rel in (IDENTITY, THREADS, PYSPY, SAMPLES):
        fifo(run / rel)


def links_outside(run: Path) -> None:
    outside = run.parent.parent / "outside"
    for rel in (IDENTITY, THREADS, PYSPY):
        link(run / rel, outside / Path(rel).name)
    link(run / SAMPLES, outside / "secret.txt")


def devices(run: Path) -> None:
    for rel in (IDENTITY, PYSPY, SAMPLES):
        link(run / rel, "/dev/zero")
    link(run / THREADS, "/dev/urandom")


def wrong_step_rows(run: Path) -> None:
    good = ["tf.function", EVIL, None, 1, 10, 20, 0, 5]
    rows = [good, [1] * 8, ["a", "b", None, -1, 2**70, 0, 0, 0], "row", None, [EVIL] * 9]
    write(run, STEPS, {"main_thread": 1, "rows": rows})


# name -> how to plant it in a copy of the sample run
NAMED: dict[str, Callable[[Path], None]] = {
    "manifest-fifo": lambda r: fifo(r / "manifest.json"),
    "xplane-fifo": lambda r: fifo(xplane_of(r)),
    "xplane-dev-zero": lambda r: link(xplane_of(r), "/dev/zero"),
    "manifest-dev-zero": lambda r: link(r / "manifest.json", "/dev/zero"),
    "xplane-directory": xplane_dir,
    "xplane-truncated": lambda r: xplane_of(r).write_bytes(xplane_of(r).read_bytes()[:30_000]),
    "recorded-files-fifos": every_file_fifo,
    "recorded-files-devices": devices,
    "recorded-files-link-outside": links_outside,
    "manifest-list": lambda r: write(r, "manifest.json", [read(r, "manifest.json")]),
    "manifest-deep": lambda r: write_text(r, "manifest.json", deep()),
    "manifest-deep-inside": lambda r: write_text(
        r, "manifest.json", '{"kind": "tftrace-run", "host": ' + deep(900) + "}"
    ),
    "manifest-wrong-types": wrong_types_manifest,
    "manifest-sources-wrong-types": wrong_types_sources,
    "identity-wrong-types": wrong_types_entries(IDENTITY, "threads"),
    "threads-wrong-types": wrong_types_entries(THREADS, "threads"),
    "pyspy-wrong-types": wrong_types_entries(PYSPY, ""),
    "identity-deep": lambda r: write_text(r, IDENTITY, deep()),
    "npz-mismatched-columns": mismatched_columns,
    "npz-object-columns": object_columns,
    "npz-float-and-2d-columns": float_and_2d_columns,
    "npz-not-a-zip": lambda r: (r / SAMPLES).write_bytes(b"PK\x03\x04" + b"\xff" * 5000),
    "npz-unknown-threads": unknown_tids,
    "hostile-names": hostile_names,
    "steps-fifo": lambda r: os.mkfifo(r / STEPS),
    "steps-dev-zero": lambda r: (r / STEPS).symlink_to("/dev/zero"),
    "steps-wrong-rows": wrong_step_rows,
}


def wrong_values(value: Any) -> list[Any]:
    """Values of other types than ``value``'s, and numbers no recorder writes."""
    odd_numbers: list[Any] = [-1, 2**70, 10**30, 1.5e308, float("nan"), True]
    if isinstance(value, dict):
        return [[], "text", 7, None, [value]]
    if isinstance(value, list):
        return [{}, "text", 7, {"0": value}, [[[]]]]
    if isinstance(value, str):
        return [7, [value], {"value": value}, None, EVIL]
    if isinstance(value, bool):
        return ["true", 1, None]
    if isinstance(value, (int, float)):
        return [str(value), [value], None, *odd_numbers]
    return [[], {}, "text", 7]


# --- running ---------------------------------------------------------------------------------


def snapshot(root: Path, skip: set[Path]) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under ``root`` but those under ``skip`` (no link is
    followed, nothing is opened)."""
    found = {}
    for where, folders, files in os.walk(root):
        here = Path(where)
        folders[:] = [f for f in folders if here / f not in skip]
        for name in files:
            info = (here / name).lstat()
            found[str((here / name).relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return found


def problems(name: str, code: Any, stdout: str, stderr: str) -> list[str]:
    """What is wrong with one command's ending, in words (nothing when all is well)."""
    found = []
    if code not in (0, 2):
        found.append(f"exit {code}")
    if "Traceback" in stderr:
        found.append("a traceback")
    lines = stderr.strip().splitlines()
    if code == 2 and (len(lines) != 1 or not lines[0].startswith("tftrace: error: ")):
        found.append(f"not one line of error: {stderr[-600:]!r}")
    if "\x1b" in stdout or "\x1b" in stderr:
        found.append("an escape character in the output")
    return [f"{name}: {p}" for p in found]


def run_command(args: list[str | Path]) -> tuple[Any, str, str]:
    try:
        proc = subprocess.run(
            tftrace_command(*args),
            capture_output=True,
            text=True,
            errors="replace",
            env=quiet_env(),
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return "a hang", "", ""
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def place(tmp_path: Path) -> Callable[[str], tuple[Path, Path]]:
    """``place(name)``: a fresh copy of the sample run and an output folder for a case, beside
    a folder of other files (``outside``) that nothing may change."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for rel in (IDENTITY, THREADS, PYSPY):
        shutil.copy(SAMPLE_RUN / rel, outside / Path(rel).name)
    (outside / "secret.txt").write_text("not for a report\n")

    def _place(name: str) -> tuple[Path, Path]:
        run = Path(shutil.copytree(SAMPLE_RUN, tmp_path / "cases" / name / "run"))
        out = tmp_path / "cases" / name / "out"
        out.mkdir()
        return run, out

    return _place


def check_untouched(tmp_path: Path, before: dict[str, tuple[int, int]]) -> None:
    skip = {*(tmp_path / "cases").glob("*/*"), tmp_path / "cases" / "drivers"}
    assert snapshot(tmp_path, skip) == before, "a file outside the runs and outputs changed"


def test_every_command_survives_every_named_case(place: Any, tmp_path: Path) -> None:
    """Each named case, every command on it, through ``tftrace.cli.main`` in two driver
    processes (a process per command would spend most of the test starting Python)."""
    jobs: list[list[str]] = []
    names: list[str] = []
    for case in sorted(NAMED):
        run, out = place(case)
        NAMED[case](run)
        for command, args in commands(run, out).items():
            jobs.append([str(a) for a in args])
            names.append(f"{case} {command}")
    before = snapshot(tmp_path, set((tmp_path / "cases").glob("*/*")))
    results = run_in_drivers(jobs, tmp_path)
    assert len(results) == len(jobs) == len(NAMED) * len(commands(tmp_path, tmp_path))
    found = [
        p for name, result in zip(names, results, strict=True) for p in problems(name, *result)
    ]
    assert not found, "\n".join(found)
    check_untouched(tmp_path, before)


def test_the_sample_run_itself_passes(place: Any) -> None:
    """The checks are not vacuous: every command succeeds on the untouched copy."""
    run, out = place("untouched")
    for name, args in commands(run, out).items():
        code, stdout, stderr = run_command(args)
        assert code == 0 and not problems(name, code, stdout, stderr), (name, stderr)


# --- generated cases -------------------------------------------------------------------------

SEED = 20261122
DRIVER = r"""
import contextlib, io, json, signal, sys, traceback
from tftrace.cli import main

class Hang(BaseException):
    pass

def on_alarm(signum, frame):
    raise Hang()

signal.signal(signal.SIGALRM, on_alarm)
jobs, timeout, results = json.loads(sys.stdin.read()), int(sys.argv[2]), []
for argv in jobs:
    out, err = io.StringIO(), io.StringIO()
    signal.alarm(timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except Hang:
        code = "a hang"
    except SystemExit as e:
        code = e.code
    except BaseException:
        code = "an exception"
        err.write(traceback.format_exc())
    finally:
        signal.alarm(0)
    results.append([code, out.getvalue(), err.getvalue()])
with open(sys.argv[1], "w") as f:
    json.dump(results, f)
"""
WHOLE_FILE = {  # what a JSON file is replaced by
    "list": b"[]",
    "string": b'"text"',
    "number": b"7",
    "null": b"null",
    "empty-object": b"{}",
    "deep": deep().encode(),
    "deep-object": b'{"a": ' * 100_000 + b"1" + b"}" * 100_000,
    "cut": b'{"kind": "tftrace-run", "threads": [{"tid": 1',
    "not-utf8": b'{"kind": "\xff\xfe"}',
    "nan": b'{"kind": "tftrace-run", "threads": NaN, "host": {"cpu_count": Infinity}}',
}


def json_paths(value: Any, depth: int = 3, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to the values in ``value``, ``depth`` levels down (the first two of a list)."""
    if depth == 0 or not isinstance(value, (dict, list)):
        return []
    items = value.items() if isinstance(value, dict) else list(enumerate(value))[:2]
    out = []
    for key, inner in items:
        out.append((*prefix, key))
        out.extend(json_paths(inner, depth - 1, (*prefix, key)))
    return out


def mutated(data: Any, rng: random.Random, count: int) -> Any:
    """``data`` with ``count`` values (at random paths) replaced by ones of another type."""
    for path in sorted(rng.sample(json_paths(data), count), key=len, reverse=True):
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = rng.choice(wrong_values(parent[path[-1]]))
    return data


def xplane_damage(data: bytes, rng: random.Random) -> list[bytes]:
    out = [data[: rng.randrange(1, len(data))] for _ in range(5)]
    for _ in range(10):
        damaged = bytearray(data)
        for _ in range(rng.randrange(1, 5)):
            damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        out.append(bytes(damaged))
    return out


def generated_cases() -> dict[str, tuple[Callable[[Path], None], tuple[str, ...]]]:
    """name -> (how to plant it, the commands to run on it)."""
    rng = random.Random(SEED)
    loads = ("analyze", "threads", "export-csv")
    cases: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {}
    original = xplane_of(SAMPLE_RUN).read_bytes()
    for i, data in enumerate(xplane_damage(original, rng)):
        cases[f"xplane-damaged-{i}"] = (lambda r, d=data: xplane_of(r).write_bytes(d), loads)
    for rel in JSON_FILES:
        reads = ("analyze", "summary", "diff") if rel == "manifest.json" else loads
        if rel in (IDENTITY, THREADS):
            reads = (*reads, "summary")
        for shape, text in WHOLE_FILE.items():
            cases[f"{rel}-{shape}"] = (lambda r, p=rel, t=text: (r / p).write_bytes(t), reads)
        for i in range(8):
            changed = mutated(read(SAMPLE_RUN, rel), rng, rng.randrange(1, 4))
            cases[f"{rel}-fields-{i}"] = (lambda r, p=rel, d=changed: write(r, p, d), reads)
    every = tuple(commands(Path(), Path()))
    cases.update({name: (plant, every) for name, plant in EXTREMES.items()})
    return cases


def in_trace(change: Callable[[Any], None]) -> Callable[[Path], None]:
    """Plant ``change(line)`` for every line of the trace (valid protobuf, odd values)."""

    def plant(run: Path) -> None:
        from tftrace.analysis.xplane import schema

        space = schema.XSpace.FromString(xplane_of(run).read_bytes())
        for plane in space.planes:
            for line in plane.lines:
                change(line)
        xplane_of(run).write_bytes(space.SerializeToString())

    return plant


def in_json(rel: str, change: Callable[[Any], Any]) -> Callable[[Path], None]:
    def plant(run: Path) -> None:
        data = read(run, rel)
        change(data)
        write(run, rel, data)

    return plant


def in_samples(change: Callable[[dict[str, np.ndarray]], None]) -> Callable[[Path], None]:
    def plant(run: Path) -> None:
        columns = samples(run)
        change(columns)
        save_samples(run, columns)

    return plant


def each_event(change: Callable[[Any, int], None]) -> Callable[[Any], None]:
    return lambda line: [change(e, i) for i, e in enumerate(line.events)]


def all_columns(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict[str, Any]], None]:
    return lambda cols: cols.update({k: change(v) for k, v in cols.items()})


def each_thread(rel: str, **values: Any) -> Callable[[Path], None]:
    return in_json(rel, lambda d: [t.update(values) for t in d["threads"]])


def manifest_clock(**anchor: int) -> Callable[[Path], None]:
    return in_json("manifest.json", lambda d: d["clock"].update(start=anchor))


# Well-formed files with values no recorder writes: extremes, duplicates, reversed order.
EXTREMES: dict[str, Callable[[Path], None]] = {
    "trace-times-huge": in_trace(lambda line: setattr(line, "timestamp_ns", 2**62)),
    "trace-times-negative": in_trace(lambda line: setattr(line, "timestamp_ns", -(2**62))),
    "trace-durations-huge": in_trace(
        each_event(
            lambda e, i: (setattr(e, "duration_ps", 2**63 - 1), setattr(e, "offset_ps", 2**62))
        )
    ),
    "trace-durations-negative": in_trace(
        each_event(
            lambda e, i: (setattr(e, "duration_ps", -5 * i), setattr(e, "offset_ps", -(10**15)))
        )
    ),
    "trace-line-ids-repeated": in_trace(lambda line: setattr(line, "id", 7)),
    "trace-no-events": in_trace(lambda line: line.ClearField("events")),
    "trace-unknown-metadata": in_trace(each_event(lambda e, i: setattr(e, "metadata_id", 10**6))),
    "clock-max": manifest_clock(wall_ns=2**63 - 1, monotonic_ns=2**63 - 1),
    "clock-min": manifest_clock(wall_ns=-(2**63), monotonic_ns=-(2**63)),
    "clock-zero": manifest_clock(wall_ns=0, monotonic_ns=0),
    "cpus-many": in_json(
        "manifest.json", lambda d: d["host"].update(cpu_count=2**62, cpu_affinity=[*range(5000)])
    ),
    "cpus-none": in_json(
        "manifest.json",
        lambda d: (
            d["host"].update(cpu_count=0, cpu_affinity=[], cpu_quota=0.0),
            d["pools"].update(inter_op={"size": 0}, intra_op={"size": -3}),
        ),
    ),
    "steps-reversed": in_json("manifest.json", lambda d: d.update(recording={"steps": [5, 2]})),
    "task-odd": in_json(
        "manifest.json",
        lambda d: d.update(cluster={"type": "worker", "index": -1, "cluster": {"w": "abc"}}),
    ),
    "pyspy-figures-odd": in_json(
        "manifest.json",
        lambda d: d["sources"]["pyspy"].update(
            rate="fast", samples_line=f"Samples: {'9' * 5000} Errors: 5", nonblocking="yes"
        ),
    ),
    "identity-one-tid": each_thread(IDENTITY, tid=5),
    "identity-one-line": each_thread(IDENTITY, trace_line_id=-(2**63)),
    "threads-seen-backwards": each_thread(THREADS, first_seen_ns=2**61, last_seen_ns=1),
    "threads-twice": in_json(THREADS, lambda d: d["threads"].extend(d["threads"])),
    "pyspy-reversed": in_json(PYSPY, lambda d: d.reverse()),
    "pyspy-only-ends": in_json(PYSPY, lambda d: [e.update(ph="E") for e in d]),
    "pyspy-times-huge": in_json(PYSPY, lambda d: [e.update(ts=2**52) for e in d[::3]]),
    "samples-empty": in_samples(all_columns(lambda v: v[:0])),
    "samples-times-max": in_samples(lambda c: c.update(t_ns=np.full(len(c["t_ns"]), 2**63 - 1))),
    "samples-uint64": in_samples(all_columns(lambda v: v.astype(np.uint64) + np.uint64(2**63))),
    "samples-bool": in_samples(all_columns(lambda v: v.astype(bool))),
}


def run_in_drivers(jobs: list[list[str]], tmp_path: Path) -> list[Any]:
    """Each job (a command line) through ``tftrace.cli.main``, in two processes at once."""
    halves = [jobs[: len(jobs) // 2], jobs[len(jobs) // 2 :]]
    procs = []
    for i, half in enumerate(halves):
        result = tmp_path / "cases" / "drivers" / f"{i}.json"
        result.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(result), str(TIMEOUT_S)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=quiet_env(),
        )
        procs.append((proc, half, result))
    out = []
    for proc, half, result in procs:
        _, stderr = proc.communicate(json.dumps(half), timeout=900)
        assert proc.returncode == 0, stderr[-2000:]
        out.extend(json.loads(result.read_text()))
    return out


@pytest.mark.slow
def test_generated_hostile_runs(place: Any, tmp_path: Path) -> None:
    cases = generated_cases()
    jobs: list[list[str]] = []
    names: list[str] = []
    for case, (plant, wanted) in cases.items():
        run, out = place(case.replace("/", "_"))
        plant(run)
        every = commands(run, out)
        for command in wanted:
            jobs.append([str(a) for a in every[command]])
            names.append(f"{case} {command}")
    before = snapshot(tmp_path, set((tmp_path / "cases").glob("*/*")))
    results = run_in_drivers(jobs, tmp_path)
    assert len(results) == len(jobs) > 300
    found = [
        p for name, result in zip(names, results, strict=True) for p in problems(name, *result)
    ]
    assert not found, f"{len(found)} problems:\n" + "\n".join(found[:60])
    check_untouched(tmp_path, before)


# --- the Thread pools tab ----------------------------------------------------------------------


def in_time(call: Callable[[], Any], seconds: float = TIMEOUT_S) -> Any:
    """``call()``, failing the test where it has not returned after ``seconds`` (a hang)."""
    import threading

    box: list[Any] = []

    def work() -> None:
        try:
            box.append(call())
        except BaseException as e:  # raised again below, in the test's thread
            box.append(e)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "it hangs"
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def tab_client(logdir: Path) -> Any:
    from tensorboard.backend.application import TensorBoardWSGI
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tftrace.analysis.tensorboard_plugin.plugin import ThreadPoolsPlugin

    plugin = ThreadPoolsPlugin(base_plugin.TBContext(logdir=str(logdir)))
    return Client(TensorBoardWSGI([plugin]))


def test_the_tab_passes_by_what_is_not_a_regular_file(tmp_path: Path) -> None:
    from tftrace.analysis.tensorboard_plugin import PLUGIN_NAME

    logdir = tmp_path / "logs"
    shutil.copytree(SAMPLE_RUN, logdir / "good")
    for name, plant in (
        ("manifest-fifo", NAMED["manifest-fifo"]),
        ("manifest-dev-zero", NAMED["manifest-dev-zero"]),
        ("xplane-fifo", NAMED["xplane-fifo"]),
        ("manifest-deep", NAMED["manifest-deep"]),
    ):
        plant(Path(shutil.copytree(SAMPLE_RUN, logdir / name)))
    client = tab_client(logdir)
    route = f"/data/plugin/{PLUGIN_NAME}"
    listing = in_time(lambda: client.get(f"{route}/runs"))
    assert listing.status_code == 200
    assert [r["name"] for r in json.loads(listing.get_data())["runs"]] == ["good"]
    assert in_time(lambda: client.get(f"{route}/run?run=good")).status_code == 200
    assert in_time(lambda: client.get(f"{route}/run?run=xplane-fifo")).status_code == 404
    assert in_time(lambda: client.get("/data/plugins_listing")).status_code == 200


@pytest.mark.parametrize(
    "path", ["a%00.js", "%00", "index.js%00", "..%2fplugin.py", "%2e%2e/plugin.py", "x\u202e.js"]
)
def test_the_tabs_static_route_answers_a_bad_name_not_found(path: str) -> None:
    from tftrace.analysis.tensorboard_plugin import PLUGIN_NAME

    response = tab_client(SAMPLE_RUN).get(f"/data/plugin/{PLUGIN_NAME}/static/{path}")
    assert response.status_code in (400, 404), response.get_data()[:300]


def test_the_tab_walks_the_log_directory_outside_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While one request walks the log directory (reading manifests), the others answer at
    once with the runs found before."""
    import threading

    from tftrace.analysis.tensorboard_plugin import runs

    index = runs.RunIndex(SAMPLE_RUN.parent)
    first = index.runs()
    assert "tf-2.21" in first
    entered, release = threading.Event(), threading.Event()

    def slow_walk(logdir: Path) -> dict[str, Any]:
        entered.set()
        release.wait(TIMEOUT_S)
        return {}

    monkeypatch.setattr(runs, "find_runs", slow_walk)
    monkeypatch.setattr(runs, "RESCAN_S", 0.0)
    walker = threading.Thread(target=index.runs, daemon=True)
    walker.start()
    assert entered.wait(TIMEOUT_S)
    assert in_time(index.runs, 5) == first  # not held by the walk under way
    release.set()
    walker.join(TIMEOUT_S)
    assert index.runs() == {}  # the walk's result, once it ended


# --- the readers themselves ------------------------------------------------------------------


def test_reading_refuses_what_is_no_regular_file_or_too_large(tmp_path: Path) -> None:
    from tftrace.tracer.safe_read import FileAbsent, UnreadableFile, read_regular_bytes

    (tmp_path / "file").write_bytes(b"12345")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "dir").mkdir()
    refused = {
        "fifo": "a FIFO, not a regular file",
        "zero": "a symbolic link",
        "dir": "a directory, not a regular file",
    }
    for name, why in refused.items():
        with pytest.raises(UnreadableFile, match=why):
            in_time(lambda n=name: read_regular_bytes(tmp_path / n), 10)
    with pytest.raises(UnreadableFile, match="a character device"):
        read_regular_bytes("/dev/zero")
    with pytest.raises(FileAbsent):
        read_regular_bytes(tmp_path / "absent")
    with pytest.raises(UnreadableFile, match="5 bytes, more than the 4"):
        read_regular_bytes(tmp_path / "file", limit=4)
    sizes: list[int] = []
    assert read_regular_bytes(tmp_path / "file", check=lambda p, n: sizes.append(n)) == b"12345"
    assert sizes == [5]


def test_json_of_another_shape_is_one_line_naming_where(tmp_path: Path) -> None:
    from tftrace.analysis.model.run_files import IDENTITY, IDENTITY_THREAD, kept_records
    from tftrace.tracer.safe_read import UnreadableFile, read_json

    path = tmp_path / "x.json"
    for text, why in (
        ("[]", "expected an object, found a list"),
        (deep(), "nested too deeply"),
        ('{"a": ' + deep(100) + "}", "nested over 64 deep"),
        ('{"threads": 7}', "threads: expected a list, found an integer"),
        ("{", "not readable JSON"),
    ):
        path.write_text(text)
        with pytest.raises(UnreadableFile, match=why) as caught:
            read_json(path, IDENTITY)
        assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    missing: list[str] = []
    records = [{"tid": 1}, {"tid": "1"}, {"tid": 2, "tf_name": 3}, {"tid": 2**40}]
    assert kept_records(records, IDENTITY_THREAD, "threads", "thread identity", missing) == [
        {"tid": 1}
    ]
    assert missing == [
        "thread identity: 3 of 4 records left out (threads[1].tid: expected an integer from 0 "
        "to 4294967296, found a string)"
    ]


def test_an_npz_is_checked_before_it_is_unpacked(tmp_path: Path) -> None:
    import io
    import zipfile

    from numpy.lib import format as npy

    from tftrace.tracer.safe_read import UnreadableFile, read_npz_columns

    bomb = tmp_path / "bomb.npz"
    np.savez_compressed(bomb, a=np.zeros(8_000_000, dtype=np.int64))  # 64 MB in ~60 kB
    assert bomb.stat().st_size < 2**20
    with pytest.raises(UnreadableFile, match="unpacks to more than"):
        read_npz_columns(bomb, [["a"]], limit=2**20)
    liar = tmp_path / "liar.npz"
    header = io.BytesIO()
    npy.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": (10**15,)})
    with zipfile.ZipFile(liar, "w") as z:
        z.writestr("a.npy", header.getvalue() + b"\0" * 64)  # the header holds the magic
    with pytest.raises(UnreadableFile, match="holds less than its header says"):
        read_npz_columns(liar, [["a"]])
    for name, columns, why in (
        ("short", {"a": np.arange(3), "b": np.arange(4)}, "differ in length"),
        ("floats", {"a": np.ones(3), "b": np.ones(3)}, "not a column of integers"),
        ("objects", {"a": np.array([{}], dtype=object), "b": np.arange(1)}, "not a column"),
    ):
        np.savez(tmp_path / f"{name}.npz", **columns)  # type: ignore[arg-type]
        with pytest.raises(UnreadableFile, match=why):
            read_npz_columns(tmp_path / f"{name}.npz", [["a", "b"]])
    np.savez(tmp_path / "good.npz", a=np.arange(3), b=np.arange(3, dtype=np.uint8))
    good = read_npz_columns(tmp_path / "good.npz", [["a", "b"]])
    assert good["a"].tolist() == [0, 1, 2] and good["b"].dtype == np.uint8
