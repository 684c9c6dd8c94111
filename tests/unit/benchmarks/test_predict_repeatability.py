"""The measurement against itself (benchmarks/predict_repeatability.py) on hand-built saved
sweeps: a set scored against itself is a perfect prediction, one whose order moved is not, and
only what both sets swept at the same recorded setting is compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import load_benchmark

rep = load_benchmark("predict_repeatability")


def _save(folder: Path, workloads: dict[str, tuple[tuple[int, int], dict]]) -> Path:
    """results.json as the benchmarks write it: each workload's recorded setting and its sweep
    ({(intra, inter): median s})."""
    folder.mkdir()
    saved = []
    for name, (recorded, sweep) in workloads.items():
        base = sweep[recorded]
        rows = [
            {"intra": a, "inter": e, "runs": 5, "median_s": s, "min_s": s, "max_s": s,
             "speedup": base / s}
            for (a, e), s in sweep.items()
        ]  # fmt: skip
        saved.append({"name": name, "recorded": list(recorded), "advice": [], "env": {},
                      "objective": None, "shape": None, "other_load": None, "sweep": rows,
                      "gain": False, "hit": False, "errors": []})  # fmt: skip
    (folder / "results.json").write_text(json.dumps({"cpus": 2, "workloads": saved}))
    return folder


# 2/2 recorded; 1/2 fastest by 20 %, 1/1 slowest
STEEP = {(2, 2): 0.010, (1, 2): 0.008, (1, 1): 0.020, (2, 1): 0.012}
# the same grid measured again: 2/1 and 1/1 swapped, 1/2 still fastest but by 10 %
MOVED = {(2, 2): 0.010, (1, 2): 0.009, (1, 1): 0.011, (2, 1): 0.013}


def test_a_set_against_itself_is_a_perfect_prediction(tmp_path: Path):
    a = _save(tmp_path / "a", {"w": ((2, 2), STEEP)})
    (s,) = rep.score_sets([a], [a])
    assert s.spearman() == pytest.approx(1.0)
    assert s.best_within() is True and s.pick == (1, 2)
    assert s.errors() == pytest.approx([0, 0, 0])


def test_an_order_that_moved_between_sets_scores_below_one(tmp_path: Path):
    a = _save(tmp_path / "a", {"w": ((2, 2), STEEP)})
    b = _save(tmp_path / "b", {"w": ((2, 2), MOVED)})
    (s,) = rep.score_sets([a], [b])
    # first: 1/2 < 2/2 < 2/1 < 1/1; second: 1/2 < 2/2 < 1/1 < 2/1
    assert s.spearman() == pytest.approx(0.8)
    assert s.best_within() is True  # the first set's pick, 1/2, is the second's fastest
    # every range is one value here: all 6 pairs told apart, 5 in the same order
    assert s.told_apart() == (5, 6)
    # 1/1: 0.5x for 0.91x, the largest of the three errors
    assert max(s.errors()) == pytest.approx(abs(0.5 / (0.010 / 0.011) - 1))


def test_a_flat_first_set_keeps_the_recorded_setting(tmp_path: Path):
    flat = {(2, 2): 0.010, (1, 2): 0.0099, (1, 1): 0.012}  # 1/2 only 1 % faster
    a = _save(tmp_path / "a", {"w": ((2, 2), flat)})
    b = _save(tmp_path / "b", {"w": ((2, 2), {(2, 2): 0.010, (1, 2): 0.008, (1, 1): 0.012})})
    (s,) = rep.score_sets([a], [b])
    assert s.pick == (2, 2) and s.best_within() is False  # 2/2 ran 25 % behind 1/2


def test_only_workloads_in_both_sets_at_the_same_recorded_setting_are_compared(tmp_path: Path):
    a = _save(tmp_path / "a", {"w": ((2, 2), STEEP), "only-a": ((2, 2), STEEP),
                               "moved": ((2, 2), STEEP)})  # fmt: skip
    b = _save(tmp_path / "b", {"w": ((2, 2), STEEP), "moved": ((1, 2), STEEP)})
    scored = {s.name: s for s in rep.score_sets([a], [b])}
    assert set(scored) == {"w", "moved"}
    assert scored["moved"].skipped is not None and scored["w"].skipped is None


def test_recorded_at_intra_1_compares_the_intra_1_settings(tmp_path: Path):
    a = _save(tmp_path / "a", {"w": ((1, 2), STEEP)})
    (s,) = rep.score_sets([a], [a])
    assert sorted((r["intra"], r["inter"]) for r in s.settings) == [(1, 1), (1, 2)]


def test_the_command_prints_the_figures_and_refuses_a_folder_without_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    a = _save(tmp_path / "a", {"w": ((2, 2), STEEP)})
    b = _save(tmp_path / "b", {"w": ((2, 2), MOVED)})
    assert rep.main(["--first", str(a), "--second", str(b)]) == 0
    out = capsys.readouterr().out
    # one workload: its ranks alike over its grid and over its recorded setting
    grid = "measured against measured: rank correlation (pooled, each workload's times over "
    assert grid + "their geometric mean on its grid): 0.80" in out
    assert grid + "its recorded setting's): 0.80" in out
    with pytest.raises(SystemExit):
        rep.main(["--first", str(a), "--second", str(tmp_path)])
    assert "no results.json" in capsys.readouterr().err
