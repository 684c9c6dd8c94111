"""The thread census in words and table cells, the same in the terminal, the HTML report and
TensorBoard's text (each escapes the cells as its medium needs: a source names libraries and
environment values of the run, which are the user's strings).

Nothing is computed here: every figure is a field of ``Analysis.census`` (``metrics/census.py``);
each function says nothing (an empty line or list) for a run without a census.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tftrace.analysis.render.formatting import fmt, is_missing, markdown_table, markdown_text

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis

HEADERS = (
    "pool",
    "threads",
    "size",
    "size from",
    "CPU s",
    "on CPU",
    "run-queue s",
    "busy (trace)",
)
SOURCE = HEADERS.index("size from")  # a text column among the figures
# The terminal's 100 columns hold the figures; where each size came from follows as lines.
FIGURE_HEADERS = tuple(h for h in HEADERS if h != "size from")


def title(analysis: Analysis) -> str:
    census = analysis.census
    if census is None:
        return ""
    cpus = f"{census.cpus} usable CPUs" if census.cpus else "the CPUs (count unknown)"
    return f"threads by pool against {cpus}"


def rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """One row per pool, then ``all``: the threads, the known sizes and the CPU use summed."""
    census = analysis.census
    if census is None:
        return []
    cells: list[tuple[str, ...]] = [
        (
            str(r.pool),
            str(r.threads),
            fmt(r.size),
            str(r.source),
            fmt(r.cpu_s, ".3f"),
            fmt(r.on_cpu, ".2f"),
            fmt(r.wait_s, ".3f"),
            fmt(r.traced_busy, ".2f"),
        )
        for r in census.table.itertuples()
    ]
    table = census.table
    traced = table["traced_busy"].dropna()
    of_cpus = f" of {census.cpus}" if census.cpus and census.sampled else ""
    cells.append(
        (
            "all",
            str(census.threads),
            str(census.sized_threads) if census.sized_pools() else "-",
            "the sizes known, added up",
            fmt(table["cpu_s"].sum() if census.sampled else None, ".3f"),
            fmt(census.on_cpu, ".2f") + of_cpus,
            fmt(table["wait_s"].sum() if census.sampled else None, ".3f"),
            fmt(traced.sum() if len(traced) else None, ".2f"),
        )
    )
    return cells


def figure_rows(analysis: Analysis) -> list[tuple[str, ...]]:
    """``rows`` without the "size from" column, under ``FIGURE_HEADERS``."""
    census = analysis.census
    if census is None:
        return []
    return [row[:SOURCE] + row[SOURCE + 1 :] for row in rows(analysis)]


def source_lines(analysis: Analysis) -> list[str]:
    """``size from:``, then one line per pool: ``  blas/openmp  OPENBLAS_NUM_THREADS=2; ...``."""
    census = analysis.census
    if census is None:
        return []
    pools = [str(p) for p in census.table["pool"]]
    width = max(map(len, pools), default=0)
    sources = census.table["source"]
    return ["size from:", *(f"  {p:<{width}}  {s}" for p, s in zip(pools, sources, strict=True))]


def summary_lines(analysis: Analysis) -> list[str]:
    """The sized pools against the CPUs, and what ran on them: ``pools sized for 6 threads
    (inter-op 2 + intra-op 2 + blas/openmp 2) on 2 usable CPUs: 3.0 per CPU`` and ``on a CPU:
    1.62 threads on average (81 % of the CPUs), at most 2.00 in a 100 ms bin``."""
    census = analysis.census
    if census is None:
        return []
    lines = []
    sized = census.sized_pools()
    if sized:
        parts = " + ".join(f"{pool} {size}" for pool, size in sized)
        per_cpu = f": {census.sized_threads / census.cpus:.1f} per CPU" if census.cpus else ""
        on = f" on {census.cpus} usable CPUs" if census.cpus else ""
        lines.append(f"pools sized for {census.sized_threads} threads ({parts}){on}{per_cpu}")
    on_cpu, peak = census.on_cpu, census.peak_on_cpu
    if on_cpu is not None:
        share = f" ({on_cpu / census.cpus:.0%} of the CPUs)" if census.cpus else ""
        bin_ms = census.resolution_ns / 1e6
        most = "" if is_missing(peak) else f", at most {peak:.2f} in a {bin_ms:.0f} ms bin"
        lines.append(f"on a CPU: {on_cpu:.2f} threads on average{share}{most}")
    lines += [f"({note})" for note in census.notes]
    return lines


def markdown(analysis: Analysis) -> str:
    """The census as markdown (TensorBoard's text): its title, table and lines."""
    census = analysis.census
    if census is None:
        return ""
    return "\n\n".join(
        (
            f"**{title(analysis)}**",
            markdown_table(HEADERS, rows(analysis)),
            *map(markdown_text, summary_lines(analysis)),
        )
    )
