"""The package as users get it: the built wheel holds every sub-package and its C extensions.

The editable install finds any module under the mapped folders, so a sub-package missing from
pyproject's package list would pass every other test and still be absent from the wheel.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_RUN, quiet_env

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

# What a build reads besides the package folders (pyproject's package-dir names those).
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md", "MANIFEST.in", "LICENSE")


def setuptools_config(root: Path) -> dict:
    config: dict = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return config


def packages_on_disk(root: Path) -> dict[str, Path]:
    """Every import package under the folders that package-dir maps: dotted name -> folder."""
    found = {}
    for package, folder in setuptools_config(root)["package-dir"].items():
        base = root / folder
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base).parts
            found[".".join((package, *relative))] = init.parent
    return found


def test_package_list_names_every_package_folder():
    """pyproject lists packages by hand (setuptools' find cannot map several folders into one
    package), so a folder with an ``__init__.py`` that it does not name fails here."""
    listed = setuptools_config(ROOT)["packages"]
    assert sorted(listed) == sorted(packages_on_disk(ROOT)), (
        "[tool.setuptools] packages in pyproject.toml must name exactly the package folders"
    )


def _run(command: list, **kwargs) -> subprocess.CompletedProcess[str]:
    """Run a step of the build; a failure shows what the step printed."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


def _copy_sources(destination: Path) -> Path:
    """The build inputs only: no build/ cache, no in-place extension, no caches."""
    destination.mkdir()
    for name in BUILD_FILES:
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, destination / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for folder in set(setuptools_config(ROOT)["package-dir"].values()):
        shutil.copytree(ROOT / folder, destination / folder, ignore=ignore)
    return destination


def _build_wheel(source: Path, out: Path) -> Path:
    # With setuptools and wheel at hand the build needs no network: build without isolation.
    # Otherwise pip fetches the build requirements (CI has the package index).
    local = all(importlib.util.find_spec(m) is not None for m in ("setuptools", "wheel"))
    isolation = ["--no-build-isolation"] if local else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-w", out, source])
    (wheel,) = out.glob("tftrace-*.whl")
    return wheel


def _fresh_venv(path: Path, wheel: Path) -> Path:
    """A new environment with only the wheel installed; the dependencies (TensorFlow, pandas)
    come from this interpreter's site-packages through a .pth line instead of a download.
    A path named in a .pth is not itself a site directory, so the editable install's own .pth
    (its import hook onto the source tree) is not run there."""
    venv.create(path, with_pip=False)
    python = path / "bin" / "python"
    site_packages = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    Path(site_packages, "project-dependencies.pth").write_text("\n".join(ours) + "\n")
    install = ["install", "--no-deps", "--no-index", wheel]
    _run([sys.executable, "-m", "pip", "--python", python, *install])
    return path


@pytest.mark.slow
def test_wheel_installs_and_analyzes_outside_the_source_tree(tmp_path: Path):
    source = _copy_sources(tmp_path / "source")
    wheel = _build_wheel(source, tmp_path / "dist")

    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {
        "/".join((*package.split("."), module.name))
        for package, folder in packages_on_disk(source).items()
        for module in folder.glob("*.py")
    }
    assert not modules - names, f"missing from the wheel: {sorted(modules - names)}"
    assert any(p.startswith("tftrace/analysis/") and p.count("/") > 2 for p in modules)
    for extension in (
        "tftrace/analysis/xplane/_wire",
        "tftrace/analysis/export/_events",
        "tftrace/tracer/_procstat",
    ):
        assert extension + sysconfig.get_config_var("EXT_SUFFIX") in names
    # the Thread pools tab: its page ships as package data, TensorBoard finds it by entry point
    static = source / "analysis" / "tensorboard_plugin" / "static"
    pages = {f"tftrace/analysis/tensorboard_plugin/static/{p.name}" for p in static.iterdir()}
    assert pages and not pages - names, f"missing from the wheel: {sorted(pages - names)}"
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    plugin = "tftrace = tftrace.analysis.tensorboard_plugin.plugin:ThreadPoolsPlugin"
    assert plugin in zipfile.ZipFile(wheel).read(entry_points).decode()

    env = quiet_env()
    env.pop("PYTHONPATH", None)
    fresh = _fresh_venv(tmp_path / "venv", wheel)
    where = tmp_path / "elsewhere"
    where.mkdir()
    probe = _run(
        [
            fresh / "bin" / "python",
            "-c",
            "import importlib.util, json, tftrace, tftrace.analysis.xplane.decode as d;"
            "import tftrace.analysis.export.trace_fields as f, tftrace.tracer.os_sampler as s;"
            "wire = importlib.util.find_spec('tftrace.analysis.xplane._wire').origin;"
            "events = importlib.util.find_spec('tftrace.analysis.export._events').origin;"
            "procstat = importlib.util.find_spec('tftrace.tracer._procstat').origin;"
            "print(json.dumps([d.native_available() and f.native_available()"
            " and s._procstat is not None, tftrace.__file__, wire, events, procstat]))",
        ],
        cwd=where,
        env=env,
    )
    native, *files = json.loads(probe.stdout)
    assert native
    for path in files:
        assert Path(path).is_relative_to(fresh), f"{path} is not from the installed wheel"

    done = subprocess.run(
        [fresh / "bin" / "tftrace", "analyze", SAMPLE_RUN],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for title in ("findings", "pools", "queue delay", "CPU truth", "where the wall time went"):
        assert title in done.stdout
    assert "inter-op" in done.stdout and "intra-op" in done.stdout
