"""Outputs only show: render/, export/ and the TensorBoard tab read an ``Analysis`` (or its
``Metrics``) and never reach into ``analysis/metrics`` to compute a figure of their own.

Every import counts, whatever guards it: at the top, inside a function (a lazy import), or
under ``if TYPE_CHECKING``; relative imports are resolved against the module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = "tftrace"
FORBIDDEN = f"{PACKAGE}.analysis.metrics"
OUTPUT_DIRS = ("analysis/render", "analysis/export", "analysis/tensorboard_plugin")


def _module_name(path: Path) -> str:
    """``analysis/render/plots.py`` -> ``tftrace.analysis.render.plots`` (a package's
    ``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def imported_modules(source: str, module: str, is_package: bool = False) -> list[str]:
    """Every module ``source`` imports, anywhere in it, with relative imports resolved
    (``from ..metrics import busy`` in ``tftrace.analysis.render.x`` ->
    ``tftrace.analysis.metrics`` and ``tftrace.analysis.metrics.busy``)."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names]
    return found


def metrics_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    return [
        name
        for name in imported_modules(source, module, is_package)
        if name == FORBIDDEN or name.startswith(FORBIDDEN + ".")
    ]


def metrics_importers() -> dict[str, list[str]]:
    """Each output module that imports from metrics, with what it imports."""
    found = {}
    for directory in OUTPUT_DIRS:
        for path in sorted((ROOT / directory).rglob("*.py")):
            source, module = path.read_text(), _module_name(path)
            names = metrics_imports(source, module, path.name == "__init__.py")
            if names:
                found[str(path.relative_to(ROOT))] = names
    return found


def test_outputs_import_nothing_from_metrics() -> None:
    found = metrics_importers()
    assert not found, f"outputs read the Analysis, not analysis/metrics: {found}"


def test_the_check_sees_every_kind_of_import() -> None:
    """A planted import of each kind is caught, so the test above can fail."""
    module = "tftrace.analysis.render.planted"
    planted = {
        "import tftrace.analysis.metrics.busy": "tftrace.analysis.metrics.busy",
        "from tftrace.analysis.metrics import busy": "tftrace.analysis.metrics",
        "from ..metrics.steps import Steps": "tftrace.analysis.metrics.steps",
        "from .. import metrics": "tftrace.analysis.metrics",
        "if TYPE_CHECKING:\n    from tftrace.analysis.metrics.census import Census": (
            "tftrace.analysis.metrics.census"
        ),
        "def f():\n    from tftrace.analysis.metrics.requests import Requests": (
            "tftrace.analysis.metrics.requests"
        ),
    }
    for source, name in planted.items():
        assert name in metrics_imports(source, module), source
    assert metrics_imports("from tftrace.analysis.model.pools import Pool", module) == []
    assert metrics_imports("from .table import Table", module) == []
    # in a package's __init__, ".." is the package's parent
    package = "tftrace.analysis.render"
    assert metrics_imports("from ..metrics import busy", package, is_package=True)
