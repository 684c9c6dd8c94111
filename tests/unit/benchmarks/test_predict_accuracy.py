"""The prediction accuracy benchmark's scoring on hand-built data: rank correlation, the best
setting within 5 %, the speedup error, and what a --predict 2 sweep would have recommended."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import load_benchmark

pa = load_benchmark("predict_accuracy")


def scored(name, recorded, rows, pick=None, order=None, basis="calibrated"):
    """rows: (intra, inter, measured s, predicted s); speedups over the recorded setting;
    ``pick``: what the prediction recommends (``Prediction.recommended``), None: keep;
    ``order``: the settings as ``Prediction.ranked`` orders them (default: fastest
    predicted first)."""
    rec = next(r for r in rows if (r[0], r[1]) == recorded)
    order = order or [(a, e) for a, e, _, _ in sorted(rows, key=lambda r: r[3])]
    settings = [
        {
            "intra": a,
            "inter": e,
            "recorded": (a, e) == recorded,
            "measured_s": m,
            "predicted_s": p,
            "meas_speedup": rec[2] / m,
            "pred_speedup": rec[3] / p,
            "basis": "recorded" if (a, e) == recorded else basis,
            "reason": "cores",
            "rank": order.index((a, e)),
        }
        for a, e, m, p in rows
    ]
    return pa.Scored(name, recorded, settings, pick=pick)


# Recorded 2/2 at 10 ms (predicted 10); 1/2 measured 5 ms, predicted 6 (speedup 1.67 for 2.0:
# 17 % off); 1/1 measured 20, predicted 20 (0 %); 2/1 measured 11, predicted 12 (0.83 for
# 0.91: 8 % off). The same order predicted as measured.
GRID = [(2, 2, 0.010, 0.010), (1, 2, 0.005, 0.006), (1, 1, 0.020, 0.020), (2, 1, 0.011, 0.012)]
GOOD = scored("good", (2, 2), GRID, pick=(1, 2))
# The model picks 2/1 (predicted 8 ms), which measured 12: 1/2 (measured 5) is the best.
WRONG = scored("wrong", (2, 2), [(2, 2, 0.010, 0.010), (1, 2, 0.005, 0.012),
                                 (2, 1, 0.012, 0.008)], pick=(2, 1))  # fmt: skip


def test_rank_correlation_and_the_best_setting_per_workload():
    assert GOOD.spearman() == pytest.approx(1.0)
    assert GOOD.best_within() is True  # 1/2, predicted and measured fastest
    # predicted 2/1, 2/2, 1/2 against measured 1/2, 2/2, 2/1
    assert WRONG.spearman() == pytest.approx(-1.0)
    assert WRONG.best_within() is False  # 2/1 ran 12 ms, 2.4x the best


def test_a_prediction_that_recommends_nothing_keeps_the_recorded_setting():
    flat = scored("flat", (2, 2), [(2, 2, 0.010, 0.010), (1, 2, 0.012, 0.0099)])
    assert flat.picked()["intra"] == 2  # 1/2 predicted only 1 % faster: nothing recommended
    assert flat.best_within() is True


def test_the_speedup_error_leaves_the_recorded_setting_out():
    # |(10/6)/(10/5) - 1|, |1 - 1|, |(10/12)/(10/11) - 1|
    assert sorted(GOOD.errors()) == pytest.approx([0.0, 1 / 12, 1 / 6])


def test_pooled_rank_correlation_puts_each_workload_on_one_scale():
    # a workload ten times slower with the same shape ranks as one, on either scale
    slow = scored("slow", (2, 2), [(a, e, 10 * m, 10 * p) for a, e, m, p in GRID])
    for over in (pa.GRID, pa.RECORDED):
        assert pa.pooled_spearman([GOOD, slow], over) == pytest.approx(1.0)
        assert pa.pooled_spearman([GOOD, WRONG], over) < 0.9
    assert pa.pooled_spearman([]) is None


def test_the_targets_rank_correlation_is_over_each_workloads_grid():
    # w1's 2/2 measured 1.6x slower than predicted: over the grid, predicted times rank w1's
    # 2/2, 1/2, 1/1 at 1, 4, 6 and w2's at 2, 3, 5; measured, 2, 3, 5 and 1, 4, 6: six
    # ranks off by one (``test_pooled_rank``)
    w1 = scored("w1", (2, 2), [(2, 2, 1.6, 1.0), (1, 2, 2.0, 2.0), (1, 1, 4.0, 4.0)])
    w2 = scored("w2", (2, 2), [(2, 2, 1.0, 1.0), (1, 2, 1.5, 1.5), (1, 1, 3.0, 3.0)])
    assert pa.pooled_spearman([w1, w2]) == pytest.approx(1 - 6 * 6 / 210)
    assert pa.figures([w1, w2])["spearman"] == pytest.approx(1 - 6 * 6 / 210)


def test_a_predict_2_sweep_runs_the_recorded_and_the_two_predicted_best():
    rows = pd.DataFrame(
        [
            {"intra": a, "inter": e, "runs": 5, "median_s": m, "min_s": m * 0.99,
             "max_s": m * 1.01}
            for a, e, m, _ in GRID
        ]
    )  # fmt: skip
    picked = pa._predicted_k(rows, GOOD, 2)
    assert sorted(zip(picked["intra"], picked["inter"], strict=True)) == [(1, 2), (2, 1), (2, 2)]
    # the whole grid and the three runs recommend the same: 1/2, 2x faster beyond noise
    assert pa._recommendation(rows, (2, 2)) == pa._recommendation(picked, (2, 2)) == "1/2"


def test_a_predict_2_sweep_takes_the_settings_in_the_predictions_order_not_its_rounding():
    # 1/1 and 1/4 predicted alike (within 1 %): the prediction ranks 1/1 first (what the run
    # shows before an extrapolation), though the replay put 1/4 a hair faster
    grid = [(2, 1, 0.010, 0.010), (1, 2, 0.008, 0.0080), (1, 1, 0.006, 0.00840),
            (1, 4, 0.009, 0.00839)]  # fmt: skip
    order = [(1, 2), (1, 1), (1, 4), (2, 1)]
    s = scored("tied", (2, 1), grid, order=order)
    rows = pd.DataFrame(
        [{"intra": a, "inter": e, "runs": 5, "median_s": m, "min_s": m * 0.99,
          "max_s": m * 1.01} for a, e, m, _ in grid]
    )  # fmt: skip
    picked = pa._predicted_k(rows, s, 2)
    assert sorted(zip(picked["intra"], picked["inter"], strict=True)) == [(1, 1), (1, 2), (2, 1)]
    assert pa._recommendation(picked, (2, 1)) == pa._recommendation(rows, (2, 1)) == "1/1"


def test_a_predict_2_sweep_times_what_it_cannot_rank_too():
    """As ``sweep --predict 2`` does: every setting of a server at two paces, and the grid's
    settings not predicted (intra-op 2 from a recording at intra-op 1)."""
    rows = pd.DataFrame(
        [{"intra": a, "inter": e, "runs": 5, "median_s": m, "min_s": m * 0.99,
          "max_s": m * 1.01} for a, e, m, _ in GRID]
    )  # fmt: skip
    paced = scored("paced", (2, 2), GRID, basis="less sure: two paces")
    paced.paces = (0.8, 1.2)  # what ``score`` sets for a server at two paces
    assert len(pa._predicted_k(rows, paced, 1)) == len(GRID)
    at_1 = scored("at-1", (1, 1), [r for r in GRID if r[0] == 1])
    picked = pa._predicted_k(rows, at_1, 0)
    assert sorted(zip(picked["intra"], picked["inter"], strict=True)) == [(1, 1), (2, 1), (2, 2)]


def test_figures_and_their_verdicts():
    skipped = pa.Scored("server", (2, 2), skipped="this run is a server")
    for s in (GOOD, WRONG, skipped):
        s.grid_size = 6
    GOOD.timed_k = WRONG.timed_k = 3
    GOOD.recommended, GOOD.predicted_recommendation = "1/2", "1/2"
    WRONG.recommended, WRONG.predicted_recommendation = "1/2", "keep"
    f = pa.figures([GOOD, WRONG, skipped])
    assert (f["workloads"], f["predicted"]) == (3, 2)
    assert f["best_within"] == (1, 2)
    assert f["runs_saved"] == (6, 12)  # 3 of 6 settings run, per workload predicted
    assert f["reached"] == (1, 2)
    lines = dict(pa.judgements(f))
    best = next(line for line in lines if line.startswith("best within"))
    assert lines[best] is False and "**FAIL**" in best
    assert any(line.startswith("predicted: 2 of 3") for line in lines)


def test_the_table_names_the_machine_the_runs_were_recorded_on(tmp_path):
    """Runs saved elsewhere are scored here: the machine is their manifests', once each; a
    record without a manifest is passed over."""
    manifest = (
        '{"kind": "tftrace-run", "host": {"cpu_model": "Some CPU", "cpu_affinity": [0, 1, 2],'
        ' "cpu_count": 8}, "versions": {"tensorflow_runtime": "2.21.0"}}'
    )
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(manifest)
    records = [tmp_path / "a", tmp_path / "b", tmp_path / "missing"]
    assert pa.recorded_on(records) == "CPU: Some CPU; usable cores: 3; TensorFlow 2.21.0"
    assert pa.recorded_on([tmp_path / "missing"]) == "unknown (no manifest read)"


def test_a_manifests_machine_name_is_shown_as_itself_in_markdown(tmp_path):
    (tmp_path / "manifest.json").write_text(
        '{"kind": "tftrace-run", "host": {"cpu_model": "<b>[x](y)</b>", "cpu_count": 2}}'
    )
    first = pa.markdown([], [], "saved", [tmp_path]).splitlines()[0]
    assert first == (
        r"- recorded on CPU: &lt;b&gt;\[x\]\(y\)&lt;/b&gt;; usable cores: 2; TensorFlow unknown"
    )


def _ranged(predicted_b: float) -> object:
    # 2/2: 10 ms (9-11), 1/2: 5 ms (4.5-5.5), 1/1: 10.5 ms (10-12, overlapping 2/2's range)
    rows = [((2, 2), 0.010, 0.009, 0.011, 0.010), ((1, 2), 0.005, 0.0045, 0.0055, predicted_b),
            ((1, 1), 0.0105, 0.010, 0.012, 0.009)]  # fmt: skip
    settings = [
        {"intra": k[0], "inter": k[1], "recorded": k == (2, 2), "measured_s": m, "min_s": lo,
         "max_s": hi, "predicted_s": p, "meas_speedup": 0.010 / m, "pred_speedup": 0.010 / p}
        for k, m, lo, hi, p in rows
    ]  # fmt: skip
    return pa.Scored("ranged", (2, 2), settings)


def test_only_the_pairs_the_measurement_tells_apart_are_ordered():
    # 2/2 against 1/1 overlap: the model's order of those two (1/1 predicted faster) is not
    # judged; 1/2 is apart from both
    assert _ranged(0.006).told_apart() == (2, 2)
    assert _ranged(0.011).told_apart() == (0, 2)  # 1/2 predicted slower than both
    found = pa.figures([_ranged(0.006), _ranged(0.011)])
    assert found["told_apart"] == (2, 4)
    assert any("2 of 4 pairs ordered as measured (50%)" in line for line, _ in pa.judgements(found))
    assert GOOD.told_apart() == (0, 0)  # no ranges: nothing judged


def test_timed_runs_are_the_compared_settings_at_the_recorded_variables(tmp_path):
    s = scored("w", (2, 2), [(2, 2, 10, 10), (1, 2, 5, 6), (1, 1, 20, 20)])
    blas = {"OPENBLAS_NUM_THREADS": "2"}
    one = {"OPENBLAS_NUM_THREADS": "1"}
    runs = [
        {"intra": 2, "inter": 2, "round": 0, "time_s": 0.01, "env": blas, "steps": 9},
        {"intra": 2, "inter": 2, "round": 0, "time_s": 0.02, "env": one},
        {"intra": 1, "inter": 2, "round": 0, "time_s": 0.005, "env": blas},
        {"intra": 4, "inter": 2, "round": 0, "time_s": 0.03, "env": blas},  # not compared
        {"intra": 1, "inter": 1, "round": 0, "time_s": None, "env": blas},  # failed run
    ]
    path = tmp_path / "sweep.json"
    path.write_text(pa.json.dumps({"runs": runs}))
    got = pa.timed_runs(path, (("OPENBLAS_NUM_THREADS", "2"),), s)
    assert got == [
        {"intra": 2, "inter": 2, "round": 0, "time_s": 0.01},
        {"intra": 1, "inter": 2, "round": 0, "time_s": 0.005},
    ]
    assert pa.timed_runs(tmp_path / "missing.json", (), s) == []


def test_the_measurement_line_gives_the_ceiling_or_why_there_is_none():
    line = pa._measurement_line(
        {"half": 0.65, "full": 0.79, "ceiling": 0.89, "splits": 35, "points": 104}
    )
    assert "104 settings alike at 0.65" in line and "about 0.89" in line
    assert "a ceiling of 0.9 takes about" not in line  # the line was given no runs to reach
    assert "n/a" in pa._measurement_line(None)
    short = pa._measurement_line(
        {
            "half": 0.65,
            "full": 0.78,
            "ceiling": 0.88,
            "splits": 35,
            "points": 9,
            "rounds_for_target": 9,
        }
    )
    assert short.endswith("a ceiling of 0.9 takes about 9 runs a setting")


def test_the_predictions_and_the_measurement_against_another_sweep():
    # another sweep of GOOD's workload ranks its settings 1/2, 2/2, 2/1, 1/1 as GOOD's own
    # measurement and prediction do: both agree with it fully; WRONG's workload was recorded
    # at another setting there, and a workload the other sweep lacks is passed over
    table = pd.DataFrame(
        {"intra": [2, 1, 1, 2], "inter": [2, 2, 1, 1], "median_s": [0.02, 0.01, 0.05, 0.03]}
    )
    other = {
        "good": pa.d.Outcome("good", (2, 2), table=table),
        "wrong": pa.d.Outcome("wrong", (1, 1), table=table),
    }
    lone = scored("lone", (2, 2), GRID)
    found = pa.against([GOOD, WRONG, lone], other)
    assert (found["workloads"], found["points"]) == (1, 4)
    assert found["predicted"] == pytest.approx(1.0)
    assert found["measured_over_recorded"] == pytest.approx(1.0)
    # the other sweep's 2/1 and 1/1 swapped: two of four ranks off by one, 1 - 6 * 2 / 60
    swapped = table.assign(median_s=[0.02, 0.01, 0.03, 0.05])
    found = pa.against([GOOD], {"good": pa.d.Outcome("good", (2, 2), table=swapped)})
    assert found["predicted"] == pytest.approx(1 - 6 * 2 / 60)
    assert pa.against([GOOD], {}) is None
    line = pa._against_line(found)
    assert line.startswith("against another sweep (1 workload, 4 settings)")
    assert "at 0.80 over each grid" in line


def test_a_folder_without_results_is_refused_before_anything_runs(tmp_path, capsys):
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "results.json").write_text('{"workloads": []}')
    assert pa.without_results([tmp_path / "saved"]) is None
    assert pa.without_results([tmp_path / "saved", tmp_path]) == tmp_path
    # --against is checked with --from, and without it before the corpus would run
    for argv in (["--from", str(tmp_path / "saved"), "--against", str(tmp_path)],
                 ["--against", str(tmp_path)]):  # fmt: skip
        with pytest.raises(SystemExit):
            pa.main(argv)
        assert f"{tmp_path}: no results.json" in capsys.readouterr().err


def test_a_corrupt_saved_run_is_refused_in_one_line_before_anything_runs(tmp_path):
    (tmp_path / "results.json").write_text('{"workloads": [{"name": ')
    for argv in (["--from", str(tmp_path)], ["--against", str(tmp_path)]):
        with pytest.raises(SystemExit) as refused:
            pa.main(argv)
        assert str(refused.value.code).startswith(f"{tmp_path / 'results.json'}: not a saved run")


def spanned(s, low=0.75, high=1.3):
    """``s`` as a server at two paces (``low``, ``high``: its paces over the window's): each
    other setting predicted as its replayed speedup times either pace."""
    s.paces = (low, high)
    for r in s.settings:
        if not r["recorded"]:
            r["bound"] = [r["pred_speedup"] * low, r["pred_speedup"] * high]
    return s


def test_a_two_paced_servers_spans_and_the_settings_measured_inside_them():
    # recorded 2/2 at 1 s a request; the others ran 1.25x, 0.8x and 0.5x as fast, each
    # replayed at 1.0x: spans of 0.75-1.3x
    rows = [(2, 2, 1.0, 1.0), (2, 1, 0.8, 1.0), (1, 1, 1.25, 1.0), (4, 4, 2.0, 1.0)]
    s = scored("serve", (2, 2), rows)
    assert not s.spans and s.inside_spans() == (0, 0)
    assert not any("two paces" in line for line in pa.detail([s]))
    spanned(s)
    assert s.spans and s.inside_spans() == (2, 3)  # 1.25x and 0.8x inside, 0.5x below
    said = [line for line in pa.detail([s]) if "two paces" in line]
    assert said == [
        "  serve ran at two paces, 0.75x and 1.30x its window's requests/s; predicted spans: "
        "2/1 0.75-1.30, 1/1 0.75-1.30, 4/4 0.75-1.30: 2 of 3 settings measured inside theirs"
    ]
    # a span is checked against its own setting's replayed figure, not the paces alone
    s.settings[3]["bound"] = [0.4, 0.6]
    assert s.inside_spans() == (3, 3)


def test_the_point_figures_are_scored_without_the_servers_predicted_as_spans():
    one_pace = scored("one-pace", (2, 2), GRID)
    two = scored("two", (2, 2), [(2, 2, 0.010, 0.010), (1, 2, 0.005, 0.012),
                                 (2, 1, 0.012, 0.008)])  # fmt: skip
    f = pa.figures([one_pace, two])
    assert f["two_paces"] == [] and f["spearman_with_spans"] == f["spearman"] < 0.9
    assert not any("two paces" in line for line, _ in pa.judgements(f))
    with_points = f["median_error"]
    spanned(two)
    f = pa.figures([one_pace, two])
    assert f["two_paces"] == ["two"]
    assert f["spearman"] == pytest.approx(1.0)  # one-pace alone, ranked as measured
    assert f["spearman_with_spans"] < 0.9  # the replayed figures, still taken as points
    assert f["median_error"] != with_points  # the spans' settings are not point errors
    assert f["best_within"][1] == 2  # the pick is a decision on both
    # 1/2 ran 2x against 0.63-1.08x, 2/1 0.83x against 0.94-1.63x
    assert f["inside_spans"] == (0, 2)
    target = pa.judgements(f)[0]
    assert "on its grid; the servers predicted as spans left out, below): 1.000" in target[0]
    assert target[1] is True
    line, judged = next(x for x in pa.judgements(f) if "two paces" in x[0])
    assert judged is None  # no target of its own
    assert line.startswith("predicted as spans (a server at two paces: two): 0 of 2 settings")


def test_the_held_out_models_are_apart_from_the_corpus_and_run_as_its_loops_do():
    held = pa.held_out(2)
    corpus = {w.name for w in pa.d.corpus(2)}
    assert [w.name for w in held] == ["keras-lstm", "keras-transformer", "keras-efficientnet"]
    assert not corpus & {w.name for w in held}
    for w in held:
        assert w.script.is_file() and w.script.parent.name == "workloads"
        assert w.recorded == (2, 2) and w.objective is None  # a loop, timed by its steps
    assert pa.d.sweep_axes(2, held[0].recorded) == ([1, 2, 4], [1, 2])
