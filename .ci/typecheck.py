"""Type-check the tftrace package as it is installed (its folders map onto one import package).

mypy does not follow setuptools' package-dir mapping, so a tree of symlinks with the
installed layout is built and checked.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".typecheck" / "tftrace"


def main() -> int:
    TREE.mkdir(parents=True, exist_ok=True)
    for child in TREE.iterdir():
        child.unlink()
    for item in (ROOT / "src" / "tftrace").iterdir():
        if item.suffix == ".py" or (item.is_dir() and (item / "__init__.py").exists()):
            (TREE / item.name).symlink_to(item)
    (TREE / "tracer").symlink_to(ROOT / "tracer")
    (TREE / "analysis").symlink_to(ROOT / "analysis")
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "-p",
        "tftrace",
    ]
    return subprocess.call(cmd, cwd=TREE.parent)


if __name__ == "__main__":
    sys.exit(main())
