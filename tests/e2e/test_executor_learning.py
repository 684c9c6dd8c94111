"""Known answer: TF's executor learns which ops are cheap over its first calls of a function,
and not while the profiler runs (``analysis/metrics/executor_learning.py``).

``fan_out_steps.py`` calls a function of 16 small independent products 300 times. Profiled
from its first call, the executor never learns: each product a finished op readies runs as a
closure of its own on the inter-op pool, and each is traced (about 17 closures a call here).
Profiled from call 200, it has learned: they run inline on the thread that readied them, a
closure or two a call, and they are below the profiler's default level (almost none traced:
a product whose last timing before the window a preemption inflated stays expensive through
it). About 90 calls teach it; the 200 leave room for an op the machine preempted while it was
timed (one timing of 10 ms sets its estimate back by about 50 calls): once in some 20 runs,
from call 120, a product was still traced or dispatched.
``tftrace predict`` and the core-use headline say which of the two a trace shows.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import WORKLOADS, quiet_env, tftrace_command
from tftrace.analysis.metrics.busy import pool_thread_keys
from tftrace.analysis.metrics.measured import measure
from tftrace.analysis.metrics.ops import op_events
from tftrace.analysis.metrics.steps import find_steps
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.model.run import load
from tftrace.analysis.predict import predict

pytestmark = pytest.mark.slow

CALLS = 300


def recorded(tmp_path: Path, *window: str) -> Path:
    run = tmp_path / ("from-start" if not window else "later")
    env = quiet_env(TF_NUM_INTRAOP_THREADS="2", TF_NUM_INTEROP_THREADS="2")
    proc = subprocess.run(
        tftrace_command(
            "record", "--no-pyspy", "-o", run, *window, WORKLOADS / "fan_out_steps.py",
            "--calls", str(CALLS),
        ),
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return run


def closures_and_products_per_call(path: Path) -> tuple[float, float]:
    run = load(path)
    calls = len(find_steps(run).table)
    regions = run.regions
    closures = regions["thread"].isin(pool_thread_keys(run, Pool.INTER_OP)).sum()
    ops = op_events(run)
    products = ops["op_type"].astype(str).isin(["Mul", "Sum"]).sum()
    assert calls > 0
    return closures / calls, products / calls


def test_the_executor_learns_its_cheap_ops_only_unprofiled(tmp_path: Path):
    early = recorded(tmp_path)
    later = recorded(tmp_path, "--steps", "200:")
    closures, products = closures_and_products_per_call(early)
    assert closures >= 10, closures  # the 16 products, most on closures of their own
    assert products >= 30, products  # 16 products and 16 sums a call, every one traced
    closures, products = closures_and_products_per_call(later)
    assert closures <= 4, closures
    # learned cheap: below the profiler's level (32 a call first). A few may stay: a product
    # whose last timing before the window a preemption inflated stays expensive throughout,
    # the executor timing nothing while the profiler runs (1.13 a call in one run of 2 cores
    # under a full test suite)
    assert products <= 4, products
    unlearned = [n for n in predict(load(early)).notes if "TF's executor learned" in n]
    assert len(unlearned) == 1 and "--steps 100:" in unlearned[0]
    assert not [n for n in predict(load(later)).notes if "TF's executor learned" in n]
    # the headline says so too: its inter-op figures are the first regime's
    headline = measure(load(early)).core_use
    assert headline is not None and any("TF's executor learned" in n for n in headline.notes)
    headline = measure(load(later)).core_use
    assert headline is not None and not any("TF's executor learned" in n for n in headline.notes)
