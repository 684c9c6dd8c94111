"""The measurement's agreement with itself (split halves of a sweep's rounds), on hand-built
runs with a known answer."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from conftest import load_benchmark

sh = load_benchmark("split_half")


def runs(times: dict[tuple[int, int], list[float]]) -> pd.DataFrame:
    """One row a timed run: ``times`` maps a setting to its time in each round."""
    return pd.DataFrame(
        [
            {"intra": a, "inter": e, "round": r, "time_s": t}
            for (a, e), each in times.items()
            for r, t in enumerate(each)
        ]
    )


def test_a_measurement_without_noise_agrees_with_itself_whatever_the_rounds_speed():
    # round 2 is 1.5x slower for every setting (a busy minute): the speedups do not move
    steady = runs({(2, 2): [1, 1, 1.5, 1], (1, 2): [2, 2, 3, 2], (4, 2): [4, 4, 6, 4]})
    found = sh.reliability({"w": steady}, {"w": (2, 2)})
    assert (found.half, found.full, found.ceiling) == pytest.approx((1.0, 1.0, 1.0))
    assert found.splits == 3  # 4 rounds: {0,1}, {0,2}, {0,3} against the rest
    assert found.points == 3


def test_halves_that_disagree_in_one_split_of_three():
    # split {0,1}|{2,3}: A ranks above B in one half, below in the other (Spearman 0.5); the
    # other two splits see A and B tied at 2.5 s in both halves (1.0): mean 5/6
    times = {(2, 2): [1, 1, 1, 1], (1, 2): [2, 2, 3, 3], (4, 2): [3, 3, 2, 2]}
    found = sh.reliability({"w": runs(times)}, {"w": (2, 2)})
    assert found.half == pytest.approx(5 / 6)
    assert found.full == pytest.approx(2 * (5 / 6) / (1 + 5 / 6))
    assert found.ceiling == pytest.approx(math.sqrt(found.full))


def test_workloads_pool_and_seven_rounds_give_every_split_of_three_against_four():
    a = runs({(2, 2): [1] * 7, (1, 2): [2] * 7, (4, 2): [3] * 7})
    b = runs({(1, 1): [5] * 7, (2, 1): [4] * 7})
    found = sh.reliability({"a": a, "b": b}, {"a": (2, 2), "b": (1, 1)})
    assert found.splits == 35
    assert found.points == 5
    assert found.half == pytest.approx(1.0)


def test_too_few_rounds_or_settings_say_nothing():
    three_rounds = runs({(2, 2): [1, 1, 1], (1, 2): [2, 2, 2], (4, 2): [3, 3, 3]})
    assert sh.reliability({"w": three_rounds}, {"w": (2, 2)}) is None
    two_settings = runs({(2, 2): [1, 1, 1, 1], (1, 2): [2, 2, 3, 3]})
    assert sh.reliability({"w": two_settings}, {"w": (2, 2)}) is None


def test_a_workload_without_its_recorded_setting_is_left_out():
    scored = runs({(2, 2): [1, 1, 1, 1], (1, 2): [2, 2, 2, 2], (4, 2): [3, 3, 3, 3]})
    unrecorded = runs({(1, 1): [9, 1, 9, 1], (2, 1): [1, 9, 1, 9]})
    found = sh.reliability({"w": scored, "x": unrecorded}, {"w": (2, 2), "x": (4, 4)})
    assert found.points == 3
    assert found.half == pytest.approx(1.0)


def test_the_runs_a_setting_for_a_ceiling_follow_spearman_brown():
    # all the runs at 0.5 from 4 rounds; a ceiling of sqrt(0.8) wants 0.8: four times as many
    found = sh.Reliability(
        half=1 / 3, full=0.5, ceiling=math.sqrt(0.5), splits=3, points=9, rounds=4
    )
    assert found.rounds_for(math.sqrt(0.8)) == 16
    assert found.rounds_for(0.5) == 4  # reached already: the runs there are
    assert found.rounds_for(1.0) is None  # no number of runs is free of noise
    assert sh.Reliability(0.0, 0.0, 0.0, 3, 9, 4).rounds_for(0.9) is None


def test_the_best_setting_by_one_half_against_the_other():
    # "w": (1, 2) is fastest in every round: both halves pick it, always within 5 %
    clear = runs({(2, 2): [2, 2, 2, 2], (1, 2): [1, 1, 1, 1]})
    # "v": (1, 2) and (4, 2) swap in rounds 2 and 3 by 20 %: of the three splits, {0,1}|{2,3}
    # picks the other half's slow one both ways; {0,2} and {0,3} see a tie (1.1 s each),
    # where the first fastest, within 5 %, counts: 2 of 3 splits agree
    swapped = runs(
        {(2, 2): [3, 3, 3, 3], (1, 2): [1.0, 1.0, 1.2, 1.2], (4, 2): [1.2, 1.2, 1.0, 1.0]}
    )
    found = sh.best_agreement({"w": clear, "v": swapped}, 0.05)
    assert (found.workloads, found.splits, found.within) == (2, 3, 0.05)
    assert found.hits == pytest.approx(1 + 2 / 3)
    three_rounds = runs({(2, 2): [2, 2, 2], (1, 2): [1, 1, 1]})
    assert sh.best_agreement({"w": three_rounds}, 0.05) is None
