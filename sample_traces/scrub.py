"""Replace the recording machine's paths in the sample run directories with neutral ones.

Paths appear in the manifests, py-spy's file names and the profiler options stored in the
xplane; none of them matters to the tests. Idempotent: run it after recording a sample.

    python sample_traces/scrub.py sample_traces/tf-2.21
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_PYTHON_LIB = re.compile(r"(/[^\s\"']*?)(/lib/python3\.\d+/)")
_HOME = re.compile(r"/(?:root|home/[^/\s\"']+)(?=/)")
TEXT_SUFFIXES = {".json", ".log"}


def _python_prefix(match: re.Match[str]) -> str:
    """An interpreter's or a virtual environment's prefix, as a neutral one."""
    prefix = match[1]
    neutral = "/venv" if "env" in prefix.rsplit("/", 1)[-1] else "/usr/local"
    return neutral + match[2]


def scrub_text(text: str, checkout: str | None = None) -> str:
    text = _PYTHON_LIB.sub(_python_prefix, text)
    if checkout:
        text = text.replace(checkout.rstrip("/"), "/project")
    return _HOME.sub("/home/user", text)


def scrub_xplane(path: Path, checkout: str | None) -> None:
    from tensorflow.tsl.profiler.protobuf import profiler_options_pb2, xplane_pb2

    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    for plane in space.planes:
        names = {i: m.name for i, m in plane.stat_metadata.items()}
        for stat in plane.stats:
            if names.get(stat.metadata_id) == "profile_options" and stat.bytes_value:
                options = profiler_options_pb2.ProfileOptions.FromString(stat.bytes_value)
                options.repository_path = scrub_text(options.repository_path, checkout)
                stat.bytes_value = options.SerializeToString()
    path.write_bytes(space.SerializeToString())


def scrub_manifest(path: Path) -> str | None:
    """Keep only the variables tftrace records today (older runs kept other tools' TF_*);
    returns the directory the run was recorded from, to be replaced everywhere."""
    from tftrace.tracer.environment import relevant_env

    manifest = json.loads(path.read_text())
    manifest["env"] = relevant_env(manifest.get("env", {}))
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    cwd = manifest.get("cwd")
    return cwd if isinstance(cwd, str) and cwd != "/project" else None


def main(run_dirs: list[str]) -> None:
    for run in map(Path, run_dirs):
        checkout = scrub_manifest(run / "manifest.json")
        for path in run.rglob("*"):
            if path.suffix in TEXT_SUFFIXES:
                path.write_text(scrub_text(path.read_text(), checkout))
            elif path.name.endswith(".xplane.pb"):
                scrub_xplane(path, checkout)


if __name__ == "__main__":
    main(sys.argv[1:])
