"""How far does the measurement agree with itself? Two saved sweeps of the same corpus
(``predict_accuracy.py --output DIR`` or ``diagnosis.py --output DIR``, made apart), the
first taken as a perfect prediction of the second and scored exactly as ``predict_accuracy.py``
scores ``tftrace predict``: pooled rank correlation, the best setting within 5 %, the median
speedup error.

A predictor cannot be shown to do better than this: where two sweeps of the same workload on
the same machine rank its settings differently, the measured order is the machine's noise.
Read ``predict_accuracy.py``'s figures beside these.

    predict_repeatability.py --first DIR [DIR ...] --second DIR [DIR ...]

A later DIR's workload replaces an earlier one's, as ``--from`` does. Each workload in both
sets is compared on the settings ``predict_accuracy.py`` compares: those with its recorded
variables' values, and only the intra-op 1 ones where it was recorded at intra-op 1. The first
set's "pick" is its fastest setting where at least ``RECOMMEND_GAIN`` faster than the recorded
one (else the recorded one), as ``Prediction.recommended`` picks.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import diagnosis as d
import pandas as pd
import predict_accuracy as pa

from tftrace.analysis.predict.result import RECOMMEND_GAIN


def outcomes(dirs: Sequence[Path]) -> dict[str, d.Outcome]:
    """The swept workloads saved under ``dirs`` (``predict_accuracy.saved``), by name."""
    return {name: o for name, (o, _) in pa.saved(dirs).items() if o.table is not None}


def _compared(outcome: d.Outcome) -> pd.DataFrame:
    """The rows ``predict_accuracy.score`` compares, by (intra, inter)."""
    rows = pa._rows_at_recorded_env(outcome.table, outcome.env)
    if outcome.recorded[0] == 1:
        rows = rows[rows["intra"] == 1]
    keys = [(int(a), int(e)) for a, e in zip(rows["intra"], rows["inter"], strict=True)]
    columns = {"s": "median_s", "min": "min_s", "max": "max_s"}
    return pd.DataFrame(
        {name: rows[column].to_numpy(dtype=float) for name, column in columns.items()},
        index=keys,
    )


def as_prediction(first: d.Outcome, second: d.Outcome) -> pa.Scored:
    """``second``'s sweep scored with ``first``'s measured times as the prediction."""
    s = pa.Scored(second.name, second.recorded)
    both = pd.merge(
        _compared(first),
        _compared(second),
        left_index=True,
        right_index=True,
        suffixes=("_first", "_second"),
    )
    rec = tuple(second.recorded)
    if rec not in both.index or tuple(first.recorded) != rec:
        s.skipped = "the recorded setting differs between the sets, or was not swept in both"
        return s
    then, now = both.loc[[rec], "s_first"].iloc[0], both.loc[[rec], "s_second"].iloc[0]
    # the first set's order, fastest first: the "prediction's" ranking (``Prediction.ranked``)
    ranks = both["s_first"].rank(method="first").astype(int) - 1
    for ((intra, inter), row), rank in zip(both.iterrows(), ranks, strict=True):
        s.settings.append(
            {
                "intra": intra,
                "inter": inter,
                "recorded": (intra, inter) == rec,
                "measured_s": float(row["s_second"]),
                "min_s": float(row["min_second"]),
                "max_s": float(row["max_second"]),
                "predicted_s": float(row["s_first"]),
                "meas_speedup": float(now / row["s_second"]),
                "pred_speedup": float(then / row["s_first"]),
                "basis": "measured",
                "reason": "",
                "rank": int(rank),
            }
        )
    fastest = both["s_first"].idxmin()
    s.pick = fastest if then / both.loc[[fastest], "s_first"].iloc[0] >= RECOMMEND_GAIN else rec
    s.grid_size = len(both)
    return s


def score_sets(first: Sequence[Path], second: Sequence[Path]) -> list[pa.Scored]:
    """Every workload in both sets, the first's measurement as the second's prediction."""
    a, b = outcomes(first), outcomes(second)
    return [as_prediction(a[name], b[name]) for name in b if name in a]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=Path, nargs="+", required=True, metavar="DIR")
    parser.add_argument("--second", type=Path, nargs="+", required=True, metavar="DIR")
    args = parser.parse_args(argv)
    missing = pa.without_results([*args.first, *args.second])
    if missing is not None:
        parser.error(f"{missing}: no results.json (give a benchmark's --output folder)")
    scored = score_sets(args.first, args.second)
    if not scored:
        parser.error("no workload was swept in both sets")
    print(d.text_table(pa.HEADER[:7], [r[:7] for r in pa.rows(scored)]))
    print()
    # the --predict and "predicted:" lines judge tftrace's picks and reach: not this comparison's
    for line, _ in pa.judgements(pa.figures(scored)):
        if not line.startswith(("--predict", "predicted:")):
            print(line.replace("rank correlation", "measured against measured: rank correlation"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
