"""Snapshot every command's output, to show a refactoring changed none of it.

    python tools/output_snapshot.py record RUNS      # once: record a run, a sweep, copy samples
    python tools/output_snapshot.py snapshot RUNS OUT   # each side: write every output into OUT
    diff -r OUT_before OUT_after                      # nothing printed = identical

``record`` records the demo workload and a tf.data workload (``tftrace record``), a small sweep
with one recorded setting, and copies the checked-in sample traces, all under RUNS; the
snapshot then only reads them, so both sides of the comparison see the same inputs. Each
command's stdout, stderr and exit code, and the files it writes (CSV tables, Chrome trace,
the HTML page), land in OUT under one name per command.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = {
    "demo": ["examples/eager_matmul.py", "--size", "1000", "--repeat", "5"],
    "pipeline": ["tests/workloads/data_pipeline.py"],
}
SWEEP = ["--intra", "1,2", "--repeat", "1", "--no-explain", "--record"]
SWEEP_TARGET = ["examples/matmul_scaling.py", "--size", "500"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_NUM_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", COLUMNS="100", NO_COLOR="1")
    return env


def tftrace(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tftrace", *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        check=False,
    )


def record(runs: Path) -> None:
    runs.mkdir(parents=True, exist_ok=True)
    for name, target in RECORDINGS.items():
        done = tftrace("record", "--no-pyspy", "-o", runs / name, *target)
        print(f"record {name}: exit {done.returncode}")
    done = tftrace("sweep", *SWEEP, "-o", runs / "sweep", *SWEEP_TARGET)
    print(f"sweep: exit {done.returncode}")
    for sample in sorted((ROOT / "sample_traces").glob("tf-*")):
        shutil.copytree(sample, runs / sample.name, dirs_exist_ok=True)


def _save(out: Path, name: str, done: subprocess.CompletedProcess[str]) -> None:
    (out / f"{name}.out").write_text(f"exit {done.returncode}\n{done.stdout}")
    (out / f"{name}.err").write_text(done.stderr)


def snapshot(runs: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for run in sorted(p for p in runs.iterdir() if p.is_dir() and p.name != "sweep"):
        n = run.name
        _save(out, f"{n}.summary", tftrace("summary", run))
        _save(out, f"{n}.threads", tftrace("threads", run))
        _save(out, f"{n}.threads-json", tftrace("threads", "--json", run))
        _save(out, f"{n}.analyze", tftrace("analyze", run))
        _save(out, f"{n}.analyze-json", tftrace("analyze", "--json", run))
        _save(
            out, f"{n}.export-csv", tftrace("export", run, "--format", "csv", "-o", out / n / "csv")
        )
        chrome = out / n / "chrome.json"
        _save(out, f"{n}.export-chrome", tftrace("export", run, "--format", "chrome", "-o", chrome))
        _save(out, f"{n}.report", tftrace("report", run))
        (out / n).mkdir(exist_ok=True)
        if (run / "report.html").exists():
            shutil.copy(run / "report.html", out / n / "report.html")
    _save(out, "sweep.summary", tftrace("summary", runs / "sweep"))
    # Paths of the snapshot itself differ between the two sides: say them neutrally.
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".out", ".err", ".json", ".html", ".csv"):
            text = path.read_text()
            if str(out) in text:
                path.write_text(text.replace(str(out), "OUT"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("record").add_argument("runs", type=Path)
    snap = sub.add_parser("snapshot")
    snap.add_argument("runs", type=Path)
    snap.add_argument("out", type=Path)
    ns = parser.parse_args()
    if ns.what == "record":
        record(ns.runs.resolve())
    else:
        snapshot(ns.runs.resolve(), ns.out.resolve())


if __name__ == "__main__":
    main()
