"""``sweep --predict K`` on hand-built runs: which settings are timed, what is said of the runs
saved and of what the whole grid might change, and the one-line refusals."""

from __future__ import annotations

import dataclasses

import pytest

from builders import sharded_step, stepped_run, two_closures_step
from tftrace.analysis.model.pools import Pool
from tftrace.analysis.sweep.predicted import (
    MODEL_ERROR,
    Narrowed,
    check_predictable,
    narrow,
    timed_anyway,
)
from tftrace.tracer.sweep_setting import Setting, SweepError

MAIN, INTER, EIGEN = Pool.PYTHON_MAIN, Pool.INTER_OP, Pool.INTRA_OP


def grid(intra, inter):
    return [Setting(a, e) for a in intra for e in inter]


def test_the_baseline_and_the_k_predicted_fastest_are_timed():
    """Two independent closures recorded at 1/1 (test_predicting's first known answer): inter
    2 and 4 are predicted 1.9x, inter 1 itself 1.0x; with K = 1 the first of the fastest."""
    run = stepped_run([MAIN, INTER], two_closures_step)
    settings = grid([1], [1, 2, 4])
    n = narrow(run, settings, Setting(1, 1), 1)
    assert n.why_not is None
    assert [s.key() for s in n.settings] == [Setting(1, 1).key(), Setting(1, 2).key()]
    assert n.speedups[Setting(1, 1).key()] == pytest.approx(1.0)
    assert n.speedups[Setting(1, 2).key()] == pytest.approx(20.9 / 11)
    lines = n.lines(Setting(1, 2), repeat=5)
    assert "3 of 3 settings predicted" in lines[0] and "5 of 15 timed runs saved" in lines[0]
    # inter 4, not timed, was predicted as fast as the recommended inter 2
    assert lines[1].startswith("the whole grid might change the verdict: intra 1 · inter 4")


def test_from_a_baseline_at_intra_1_the_larger_pools_are_timed_unranked():
    """A run at intra-op 1 holds no shards: intra 2 cannot be ranked, so it is timed."""
    run = stepped_run([MAIN, INTER], two_closures_step)
    n = narrow(run, grid([1, 2], [1, 2]), Setting(1, 1), 1)
    timed = {s.key() for s in n.settings}
    assert {Setting(2, 1).key(), Setting(2, 2).key()} <= timed  # not predicted: timed
    assert Setting(1, 2).key() in timed and len(n.speedups) == 2
    assert "intra 2 · inter 1 not predicted" in n.lines(Setting(1, 2), repeat=3)[0]


def test_a_setting_far_behind_is_said_to_be_safe_to_skip():
    """The op with two shards recorded at 2/1 (test_predicting: inline at intra 1 is 22 ms
    against 12): intra 1, not timed, was predicted far slower than the recommended 2/1."""
    run = stepped_run([MAIN, INTER, EIGEN, EIGEN], sharded_step, intra=2)
    settings = grid([1, 2], [1])
    n = narrow(run, settings, Setting(2, 1), 1)
    assert n.speedups[Setting(1, 1).key()] < (1 - MODEL_ERROR)
    lines = Narrowed(1, n.grid, (Setting(2, 1),), n.speedups, n.bases).lines(Setting(2, 1), 5)
    assert lines[1].startswith("the whole grid would change the verdict only if the model")


def test_a_server_at_two_paces_has_every_setting_timed():
    """The model cannot rank the settings of a server whose requests ran at two paces: each
    is timed whatever its prediction, and the result says why (none is left to miss)."""
    settings = grid([1, 2], [1, 2])
    bases = {
        Setting(2, 2).key(): "recorded",
        Setting(1, 1).key(): "less sure: two paces",
        Setting(2, 1).key(): "less sure: two paces",
    }  # 1/2 not predicted
    assert timed_anyway(settings, bases, two_paces=True) == {s.key() for s in settings}
    assert timed_anyway(settings, bases, two_paces=False) == {Setting(1, 2).key()}
    speedups = dict.fromkeys(bases, 1.0)
    bounds = {Setting(1, 1).key(): (0.8, 1.25), Setting(2, 1).key(): (0.8, 1.25)}
    narrowed = Narrowed(
        1, tuple(settings), tuple(settings), speedups, bases, two_paces=True, bounds=bounds
    )
    lines = narrowed.lines(Setting(2, 2), repeat=3)
    assert "0 of 12 timed runs saved" in lines[0]
    # each setting at two paces is its span, not one figure
    assert "intra 1 · inter 1 0.80x to 1.25x" in lines[0] and "inter 2 1.00x" in lines[0]
    assert "inter 2 not predicted" in lines[0]
    json_rows = narrowed.to_json(Setting(2, 2), 3)["settings"]
    assert [r["predicted_bound"] for r in json_rows if r["intra"] == r["inter"] == 1] == [
        [0.8, 1.25]
    ]
    assert lines[1].startswith("every setting predicted was timed: the baseline's requests ran")
    assert len(lines) == 2  # nothing untimed to have changed the verdict


def test_a_run_that_cannot_be_predicted_times_the_whole_grid():
    run = stepped_run([MAIN, INTER], two_closures_step)
    bare = dataclasses.replace(run, regions=run.regions.iloc[0:0])
    n = narrow(bare, grid([1], [1, 2]), Setting(1, 1), 1)
    assert n.settings == n.grid and n.why_not is not None
    assert n.lines(Setting(1, 1), 3) == [
        f"--predict 1: nothing predicted ({n.why_not}): the whole grid ran"
    ]


@pytest.mark.parametrize(
    ("k", "env", "cpus", "instances", "says"),
    [
        (0, False, False, False, "1 or more"),
        (2, True, False, False, "pool sizes only"),
        (2, False, True, False, "pool sizes only"),
        (2, False, False, True, "pool sizes only"),
    ],
)
def test_what_predict_cannot_do_is_refused(k, env, cpus, instances, says):
    with pytest.raises(SweepError, match=says):
        check_predictable(k, env, cpus, instances)
    check_predictable(2, False, False, False)  # pool sizes alone: taken
