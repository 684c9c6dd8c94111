"""The layout keeps saying what the code does: no import cycles, small modules, light imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import modules_loaded_by

ROOT = Path(__file__).resolve().parents[2]
# source folder -> the package it is installed as (pyproject's package-dir)
PACKAGES = {
    ROOT / "src" / "tftrace": "tftrace",
    ROOT / "tracer": "tftrace.tracer",
    ROOT / "analysis": "tftrace.analysis",
}
MAX_LINES = 420  # "no module much over 400 lines"


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((package, *parts))
            if name == "tftrace.tracer" and folder.name == "tftrace":
                continue
            found[name] = path
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports, at module level, inside a function (a lazy
    import is still a dependency) or under ``if TYPE_CHECKING`` (a type named is one too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return {m for m in out if m in known and m != name}


def test_no_import_cycles():
    found = modules()
    graph = {name: imports_of(name, path, set(found)) for name, path in found.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name)


def test_the_graph_sees_imports():
    # The checker itself: it finds a known edge, so an empty graph cannot pass for acyclic.
    found = modules()
    edges = imports_of(
        "tftrace.analysis.xplane.decode", found["tftrace.analysis.xplane.decode"], set(found)
    )
    assert "tftrace.analysis.xplane.columns" in edges


def test_the_graph_sees_type_checking_imports(tmp_path: Path):
    # A result that names its renderer only for the type checker still depends on it.
    module = tmp_path / "result.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tftrace.analysis.diff.render import diff_text\n"
    )
    known = {"tftrace.analysis.diff.result", "tftrace.analysis.diff.render"}
    edges = imports_of("tftrace.analysis.diff.result", module, known)
    assert edges == {"tftrace.analysis.diff.render"}


@pytest.mark.parametrize("name", sorted(modules()))
def test_modules_are_small(name: str):
    lines = len(modules()[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines"


def test_analysis_packages_are_light_to_import():
    # tracer/ code inside the workload may import analysis.model.vocabulary: the packages on
    # the way there must not pull in pandas or numpy.
    loaded = modules_loaded_by(
        "tftrace.analysis.model.vocabulary", "tftrace.tracer.recording", "tftrace.tracer.sweep"
    )
    assert not {"pandas", "numpy", "tensorflow"} & loaded


# tests/unit/<area>/ -> the package whose modules its files are named after
UNIT_AREAS = {
    "analysis": "tftrace.analysis",
    "cli": "tftrace",
    "tracer": "tftrace.tracer",
    **{
        area: f"tftrace.analysis.{area}"
        for area in (
            "cluster",
            "diff",
            "export",
            "findings",
            "metrics",
            "model",
            "predict",
            "render",
        )
    },
    **{area: f"tftrace.analysis.{area}" for area in ("sweep", "tensorboard_plugin", "xplane")},
}


def unit_test_subject(path: Path, known: set[str]) -> str | None:
    """The module a unit test file is named after: ``unit/metrics/test_intervals.py`` (or
    ``test_intervals_<topic>.py``) -> ``tftrace.analysis.metrics.intervals``; None if none."""
    area = path.parent.name
    stem = path.stem.removeprefix("test_")
    if area == "benchmarks":
        known = {f"benchmarks.{p.stem}" for p in (ROOT / "benchmarks").glob("*.py")}
        package = "benchmarks"
    else:
        package = UNIT_AREAS.get(area, "")
    parts = stem.split("_")
    for n in range(len(parts), 0, -1):
        name = f"{package}.{'_'.join(parts[:n])}"
        if name in known:
            return name
    return None


def test_unit_tests_are_named_after_their_module():
    """A maintainer goes from ``analysis/metrics/intervals.py`` to
    ``tests/unit/metrics/test_intervals.py``: every unit test file names a module of its
    folder's package."""
    known = set(modules())
    unit = sorted((ROOT / "tests" / "unit").rglob("test_*.py"))
    assert len(unit) > 20
    unnamed = [str(p.relative_to(ROOT)) for p in unit if unit_test_subject(p, known) is None]
    assert not unnamed, f"unit tests named after no module of their folder: {unnamed}"


def test_the_naming_check_can_fail():
    known = set(modules())
    unit = ROOT / "tests" / "unit"
    subject = unit_test_subject(unit / "sweep" / "test_timing_servers.py", known)
    assert subject == "tftrace.analysis.sweep.timing"
    assert unit_test_subject(unit / "metrics" / "test_nothing.py", known) is None
    assert unit_test_subject(unit / "nowhere" / "test_intervals.py", known) is None
