"""The workload's own Python files and their sha256, as the process ends: what ``tftrace
diff`` checks before it calls two runs the same work.

The user's code is every imported module whose file lies outside the interpreter's installs
(the standard library, site-packages) and outside tftrace; the main script is among them.
A change in one of them is a change of workload that no setting records.
"""

from __future__ import annotations

import os
import sys
import sysconfig

from ..environment import file_digest

# AutoGraph writes each converted function to a new temporary file: not the user's code
GENERATED = "__autograph_generated_file"
MAX_FILES = 500  # a program importing more of its own files keeps the first 500, by path


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for name in ("tftrace", "tftrace.tracer", "tftrace.analysis"):  # tftrace itself
        package = sys.modules.get(name)
        roots.update(getattr(package, "__path__", ()))
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


def workload_sources(cwd: str | None = None, script: str | None = None) -> dict[str, str]:
    """{path: sha256} of the user's imported Python files and of ``script`` (the main
    script, which runpy has taken out of ``sys.modules`` by the end); paths relative to
    ``cwd`` where they are under it, so that two checkouts of one project compare."""
    roots = _installed_roots()
    base = os.path.join(os.path.realpath(cwd or os.getcwd()), "")
    found = {os.path.realpath(script)} if script and os.path.isfile(script) else set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py") or GENERATED in path:
            continue
        real = os.path.realpath(path)
        if not real.startswith(roots) and os.path.isfile(real):
            found.add(real)
    sources: dict[str, str] = {}
    for real in sorted(found)[:MAX_FILES]:
        digest = file_digest(real)
        if digest is not None:
            sources[real[len(base) :] if real.startswith(base) else real] = digest
    return sources
