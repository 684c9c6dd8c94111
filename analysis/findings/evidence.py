"""Small readers of an Analysis that the rules share: a breakdown share, a pool's row, ..."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tftrace.analysis.findings.finding import Severity
from tftrace.analysis.model.pools import Pool

if TYPE_CHECKING:
    from tftrace.analysis.analyze import Analysis


def category_share(analysis: Analysis, category: str) -> float:
    b = analysis.breakdown.set_index("category")["share"]
    return float(b.get(category, 0.0))


def pool_row(analysis: Analysis, pool: Pool) -> pd.Series | None:
    rows = analysis.pools[analysis.pools["pool"] == pool.value]
    return rows.iloc[0] if len(rows) else None


def cpu_row(analysis: Analysis, pool: Pool) -> pd.Series | None:
    rows = analysis.cpu[analysis.cpu["pool"] == pool.value]
    return rows.iloc[0] if len(rows) else None


def severity_for(share: float) -> Severity:
    return Severity.HIGH if share >= 0.25 else Severity.MEDIUM if share >= 0.1 else Severity.LOW
