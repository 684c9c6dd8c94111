"""One rank correlation over many workloads' settings: each workload's step times put on one
scale before they are pooled.

Two scales:

    GRID       a workload's times over their geometric mean on its grid (the settings
               compared): the figure the prediction benchmark's target is checked on
    RECORDED   its times over its recorded setting's time (its speedups, inverted)

Over the recorded setting, that one median's noise moves every setting of its workload up or
down together, and the pooled ranks with it: on 2 cores two independent sweeps of the corpus
(7 and 9 runs a setting) ranked their 92 common settings alike at 0.75 over the recorded
setting, 0.91 over the grid (docs/predict.md). Over the grid, every setting's median carries
an equal share of the scale.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

GRID, RECORDED = "grid", "recorded"
DIGITS = 12


def on_scale(times: pd.Series, recorded: Hashable, over: str = GRID) -> pd.Series | None:
    """``times`` (one workload's, s, indexed by setting) on the pooled scale ``over``; None
    where there is no scale (a time not above 0; over RECORDED, no recorded setting)."""
    if times.empty or not (times > 0).all():
        return None
    if over == RECORDED:
        base = times.get(recorded)
        scale = float(base) if base is not None else None
    else:
        scale = math.exp(float(np.log(times).mean()))
    # rounded: times alike up to the float's last bits tie, as they are
    return (times / scale).round(DIGITS) if scale is not None else None


def pooled_spearman(
    workloads: Sequence[tuple[pd.DataFrame, Hashable]], x: str, y: str, over: str = GRID
) -> float | None:
    """Spearman's rank correlation between columns ``x`` and ``y`` (step times) over every
    workload's rows, each workload (a frame indexed by setting, with its recorded setting)
    put on the scale ``over`` first; None for fewer than 3 rows or no spread."""
    parts = []
    for frame, recorded in workloads:
        a, b = on_scale(frame[x], recorded, over), on_scale(frame[y], recorded, over)
        if a is not None and b is not None:
            parts.append(pd.DataFrame({"x": a, "y": b}))
    if not parts:
        return None
    both = pd.concat(parts, ignore_index=True)
    if len(both) < 3:
        return None
    rho = both["x"].corr(both["y"], method="spearman")
    return None if math.isnan(rho) else float(rho)
