"""The diagnosis benchmark's scoring on hand-built data: precision, recall, gains, hits."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pandas as pd
import pytest

import tftrace
from conftest import SAMPLE_RUN, load_benchmark
from tftrace.printable import printable

d = load_benchmark("diagnosis")


def table(*rows):
    """A sweep table: (intra, inter, median_s, min_s, max_s) per setting."""
    return pd.DataFrame(
        [
            {"intra": a, "inter": e, "runs": 5, "median_s": med, "min_s": lo, "max_s": hi}
            for a, e, med, lo, hi in rows
        ]
    ).astype({"intra": "Int64", "inter": "Int64"})


# Recorded 2/2 at 1.0 s; 1/2 runs 20 % faster beyond noise; 4/2 5 % faster beyond noise
# (a gain below 10 %); 1/1 20 % faster but its range overlaps the recorded one (noise).
SWEEP = table(
    (2, 2, 1.00, 0.98, 1.02),
    (1, 2, 0.80, 0.79, 0.81),
    (4, 2, 0.95, 0.94, 0.96),
    (1, 1, 0.80, 0.60, 1.00),
)


def test_resolve_keeps_the_recorded_size_where_advice_says_none():
    assert d.resolve((None, 1), (4, 2)) == (4, 1)
    assert d.resolve((1, None), (4, 2)) == (1, 2)
    assert d.resolve((None, None), (4, 2)) == (4, 2)
    assert d.resolve((3, 3), (4, 2)) == (3, 3)


def test_lookup_finds_the_row_or_none():
    assert float(d.lookup(SWEEP, (1, 2))["median_s"]) == 0.80
    assert d.lookup(SWEEP, (8, 8)) is None


def test_gain_needs_ten_percent_and_disjoint_ranges():
    base = d.lookup(SWEEP, (2, 2))
    assert d.gains(d.lookup(SWEEP, (1, 2)), base)
    assert not d.gains(d.lookup(SWEEP, (4, 2)), base)  # beyond noise, but only 5 %
    assert not d.gains(d.lookup(SWEEP, (1, 1)), base)  # 20 %, but within noise
    assert not d.gains(base, base)


def test_best_prefers_a_gain_then_the_lowest_median():
    assert d.best(SWEEP, (2, 2)) == ((1, 2), pytest.approx(1.25), True)
    flat = table((2, 2, 1.0, 0.9, 1.1), (1, 2, 0.97, 0.9, 1.05))
    assert d.best(flat, (2, 2)) == ((1, 2), pytest.approx(1.0 / 0.97), False)
    with pytest.raises(ValueError):
        d.best(flat, (4, 4))


def outcome(advice, sweep=SWEEP, recorded=(2, 2), name="w"):
    return d.Outcome(name, recorded, list(advice), sweep)


def test_advice_hit_looks_the_resolved_setting_up_in_the_sweep():
    # (1, None) resolves to 1/2, which gains; the verification does not matter then
    assert d.advice_hit(d.Advice("a", (1, None), "not confirmed", 1.0), outcome([]))
    # 1/1 is in the grid but within noise: no hit, even with a confirmed verification
    assert not d.advice_hit(d.Advice("b", (1, 1), "confirmed", 1.3), outcome([]))
    # 4/2 is in the grid, 5 % faster: no hit
    assert not d.advice_hit(d.Advice("c", (4, None), "confirmed", 1.05), outcome([]))


def test_advice_outside_the_grid_falls_back_to_its_verification():
    o = outcome([])
    assert d.advice_hit(d.Advice("a", (3, 2), "confirmed", 1.2), o)
    assert not d.advice_hit(d.Advice("a", (3, 2), "confirmed", 1.05), o)
    assert not d.advice_hit(d.Advice("a", (3, 2), "not confirmed", 1.2), o)
    assert not d.advice_hit(d.Advice("a", (3, 2), "inconclusive", 1.2), o)
    assert not d.advice_hit(d.Advice("a", (3, 2), "not verified", None), o)
    # without a sweep table (the sweep failed), only the verification is left
    assert d.advice_hit(d.Advice("a", (1, 2), "confirmed", 1.2), outcome([], sweep=None))


def test_precision_counts_inconclusive_and_unverified_as_not_confirmed():
    outcomes = [
        outcome([d.Advice("a", (1, None), "confirmed", 1.2)]),
        outcome(
            [
                d.Advice("b", (1, 1), "inconclusive", 1.1),
                d.Advice("c", (None, 1), "not confirmed", 0.9),
            ]
        ),
        outcome([d.Advice("e", (4, 2), "not verified")]),
        outcome([]),
    ]
    assert d.precision(outcomes) == (1, 4)
    assert d.precision([outcome([])]) == (0, 0)


def test_recall_over_workloads_with_a_gain():
    no_gain = table((2, 2, 1.0, 0.9, 1.1), (1, 2, 0.97, 0.9, 1.05))
    outcomes = [
        outcome([d.Advice("a", (1, None), "confirmed", 1.2)], name="hit"),
        outcome([d.Advice("b", (4, None), "confirmed", 1.05)], name="missed"),
        outcome([], name="silent"),  # a gain and no advice: a miss
        outcome([d.Advice("c", (1, None), "not confirmed", 1.0)], sweep=no_gain, name="flat"),
        outcome([d.Advice("e", (1, None), "confirmed", 1.3)], sweep=None, name="no sweep"),
    ]
    assert [d.has_gain(o) for o in outcomes] == [True, True, True, False, False]
    assert d.recall(outcomes) == (1, 3)
    assert d.recall(outcomes[3:]) == (0, 0)


def test_figures_and_their_verdicts():
    assert d.ratio(0, 0) is None
    line, ok = d.judgement("recall", 0, 0, 0.8)
    assert "n/a" in line and ok is None
    line, ok = d.judgement("precision", 9, 10, 0.9)
    assert ok is True and "0.90 (9 of 10)" in line and "PASS" in line
    line, ok = d.judgement("precision", 8, 10, 0.9)
    assert ok is False and "FAIL" in line


def test_table_rows_one_line_per_advice():
    o = outcome(
        [
            d.Advice("ops-run-inline", (2, None), "confirmed", 1.2),
            d.Advice("other", (1, None), "inconclusive", 1.25),
        ],
        recorded=(1, 2),
        sweep=table((1, 2, 1.0, 0.98, 1.02), (2, 2, 0.8, 0.79, 0.81)),
    )
    body = d.rows([o, outcome([], sweep=None, name="broken")])
    assert body[0] == (
        "w", "1/2", "ops-run-inline -> 2/2", "confirmed", "1.20x", "2/2 1.25x", "yes", "yes"
    )  # fmt: skip
    assert body[1] == ("", "", "other -> 1/2", "inconclusive", "1.25x", "", "", "")
    assert body[2] == ("broken", "2/2", "(none)", "", "", "failed", "-", "-")
    text = d.text_table(d.HEADER, body)
    assert text.splitlines()[0].startswith("workload")
    md = d.markdown_table(d.HEADER, body)
    assert md.count("\n") == len(body) + 1


def test_corpus_scripts_exist_and_record_in_the_sweep_grid():
    entries = d.corpus(4)
    assert len(entries) >= 10
    assert len({w.name for w in entries}) == len(entries)
    assert set(d.QUICK) <= {w.name for w in entries}
    for w in entries:
        assert w.script.is_file(), w.script
        intra, inter = d.sweep_axes(4, w.recorded)
        assert w.intra in intra and w.inter in inter
    assert d.sweep_axes(4, (4, 4)) == ([1, 4, 8], [1, 4])


def test_saved_results_score_as_the_run_did(tmp_path):
    """--combine rebuilds outcomes from results.json; a later file's workload replaces the
    earlier one of the same name."""
    import json

    hit = d.Advice("ops-run-inline", (1, None), "confirmed", 1.25, "r")
    missed = d.Advice("eigen-spin", (4, None), "not confirmed", 0.9, "r")
    sweep = SWEEP.assign(speedup=1.0 / SWEEP["median_s"])  # as a sweep's table has it
    first = [outcome([hit], sweep, name="a"), outcome([missed], sweep, name="b")]
    again = [outcome([hit], sweep, name="b")]
    for name, outcomes in (("one", first), ("two", again)):
        doc = {"cpus": 2, "repeat": 5, "verify_repeat": 7}
        doc["workloads"] = [d.to_json(o) for o in outcomes]
        (tmp_path / f"{name}.json").write_text(json.dumps(doc, default=str))
    back, repeats, cpus = d.combine([tmp_path / "one.json"])
    assert (repeats, cpus) == ((5, 7), 2)
    assert d.precision(back) == d.precision(first) == (1, 2)
    assert d.recall(back) == d.recall(first) and d.rows(back) == d.rows(first)
    merged, _, _ = d.combine([tmp_path / "one.json", tmp_path / "two.json"])
    assert [o.name for o in merged] == ["a", "b"] and d.precision(merged) == (2, 2)


def test_the_corpus_has_servers_swept_by_their_throughput():
    entries = {w.name: w for w in d.corpus(2)}
    servers = {n: w for n, w in entries.items() if w.clients}
    scripts = {w.script.name for w in servers.values()}
    assert {"serve_keras_threads.py", "serve_executor.py", "serve_savedmodel.py"} <= scripts
    for w in servers.values():
        assert w.objective == "throughput"
        assert ("--clients", str(w.clients)) == w.args[:2]
        assert w.clients in d.sweep_axes(2, w.recorded, w.clients)[1]
    assert entries["small-ops"].objective is None
    assert d.sweep_axes(2, (2, 2), 4) == ([1, 2, 4], [1, 2, 4])


def test_a_latency_claim_is_judged_by_its_verification_not_a_throughput_sweep():
    server = d.Outcome("s", (2, 2), [], SWEEP, objective="throughput")
    # 1/2 gains by throughput, but a p99 claim is not a throughput claim
    p99 = d.Advice("q", (1, None), "not confirmed", 0.9, objective="p99")
    assert not d.advice_hit(p99, server)
    assert d.advice_hit(d.Advice("q", (1, None), "confirmed", 1.3, objective="p99"), server)
    # the time per step and throughput are one figure
    for objective in (None, "throughput"):
        assert d.advice_hit(d.Advice("a", (1, None), "not confirmed", 1.0, "", objective), server)
    body = d.rows([d.Outcome("s", (2, 2), [p99], SWEEP, objective="throughput")])
    assert body[0][2] == "q -> 1/2 (p99)" and body[0][5] == "1/2 1.25x (throughput)"


def test_saved_results_keep_the_objectives(tmp_path):
    o = d.Outcome(
        "s",
        (2, 2),
        [d.Advice("q", (None, 4), "confirmed", 1.4, "r", "p99")],
        SWEEP.assign(speedup=1.0 / SWEEP["median_s"]),
        objective="throughput",
        shape="server",
        other_load=0.3,
    )
    import json

    (tmp_path / "r.json").write_text(
        json.dumps(
            {
                "tftrace": "abc1234",
                "cpus": 2,
                "repeat": 5,
                "verify_repeat": 7,
                "workloads": [d.to_json(o)],
            }
        )
    )
    assert d.versions([tmp_path / "r.json", tmp_path / "r.json"]) == "abc1234"
    (back,), _, _ = d.combine([tmp_path / "r.json"])
    assert (back.objective, back.shape, back.advice[0].objective) == ("throughput", "server", "p99")
    assert back.other_load == 0.3 and d.rows([back]) == d.rows([o])


def test_other_load_is_noted_from_five_percent():
    quiet, busy, unknown = (outcome([], name=n) for n in ("quiet", "busy", "unknown"))
    quiet.other_load, busy.other_load = 0.01, 0.37
    assert d.load_notes([quiet, unknown]) == []
    (line,) = d.load_notes([quiet, busy, unknown])
    assert "busy 37%" in line and "quiet" not in line
    share = d.OtherLoad().share()
    assert share is None or 0.0 <= share <= 1.0


# The BLAS workload's sweep: pools crossed with OPENBLAS_NUM_THREADS, recorded 2/2 at "2".
# The variable at 1 runs 25 % faster beyond noise; the pools at 1/1 (variable at 2) do not.
KNOB = "OPENBLAS_NUM_THREADS"
ENV_SWEEP = pd.DataFrame(
    [
        {"intra": 2, "inter": 2, KNOB: "2", "runs": 5, "median_s": 1.00, "min_s": 0.98,
         "max_s": 1.02},
        {"intra": 2, "inter": 2, KNOB: "1", "runs": 5, "median_s": 0.80, "min_s": 0.79,
         "max_s": 0.81},
        {"intra": 1, "inter": 1, KNOB: "2", "runs": 5, "median_s": 0.99, "min_s": 0.97,
         "max_s": 1.01},
        {"intra": 1, "inter": 1, KNOB: "1", "runs": 5, "median_s": 0.85, "min_s": 0.84,
         "max_s": 0.86},
    ]
).astype({"intra": "Int64", "inter": "Int64"})  # fmt: skip


def test_a_variable_is_part_of_a_setting():
    recorded = ((KNOB, "2"),)
    assert float(d.lookup(ENV_SWEEP, (2, 2), ((KNOB, "1"),))["median_s"]) == 0.80
    assert float(d.lookup(ENV_SWEEP, (2, 2), recorded)["median_s"]) == 1.00
    assert d.lookup(ENV_SWEEP, (2, 2), (("OTHER", "1"),)) is not None  # not swept: any row
    o = d.Outcome("blas", (2, 2), [], ENV_SWEEP, env=recorded)
    variable = d.Advice("library-pool-crowds-cores", (None, None), "confirmed", 1.2,
                        env=((KNOB, "1"),))  # fmt: skip
    pools = d.Advice("tf-pools-beside-library-pool", (1, 1), "not confirmed", 1.0)
    assert d.advice_hit(variable, o)  # 2/2 with the variable at 1: 1.25x
    assert not d.advice_hit(pools, o)  # 1/1 keeps the recorded variable: 1.01x
    assert d.has_gain(o) and not d.hit(o)  # no advice yet
    o.advice = [variable, pools]
    assert d.hit(o)
    pick, speedup, gained = d.best_row(ENV_SWEEP, (2, 2), recorded)
    assert d.row_label(pick) == f"2/2 {KNOB}=1" and gained and speedup == pytest.approx(1.25)
    first, second = d.rows([d.Outcome("blas", (2, 2), [variable, pools], ENV_SWEEP, env=recorded)])
    assert first[1] == f"2/2 {KNOB}=2" and first[2] == f"library-pool-crowds-cores -> 2/2 {KNOB}=1"
    assert second[2] == "tf-pools-beside-library-pool -> 1/1"


def test_saved_results_keep_the_variables(tmp_path):
    import json

    advice = d.Advice("v", (None, None), "confirmed", 1.2, "r", None, ((KNOB, "1"),))
    o = d.Outcome("blas", (2, 2), [advice], ENV_SWEEP.assign(speedup=1.0), env=((KNOB, "2"),))
    saved = {"tftrace": "x", "cpus": 2, "repeat": 5, "verify_repeat": 7,
             "workloads": [d.to_json(o)]}  # fmt: skip
    (tmp_path / "r.json").write_text(json.dumps(saved))
    (back,), _, _ = d.combine([tmp_path / "r.json"])
    assert back.env == o.env and back.advice[0].env == advice.env
    assert KNOB in back.table.columns and d.rows([back]) == d.rows([o])
    assert d.hit(back)


def test_rescore_keeps_the_verification_of_an_advice_given_again(tmp_path):
    """A saved run of the checked-in trace: its advice as this tree's rules give it, marked
    confirmed, and one the rules do not give. Rescored, the first keeps its verification,
    the second is gone."""
    shutil.copytree(SAMPLE_RUN, tmp_path / "sample" / "record")
    given = d._advice_of(tftrace.analyze(tftrace.load(tmp_path / "sample" / "record")).findings)
    assert given, "the checked-in trace advises a setting"
    kept = [dataclasses.replace(a, status="confirmed", speedup=1.5) for a in given]
    gone = d.Advice("no-such-finding", (1, 1), "not confirmed", 0.9)
    outcome = d.Outcome("sample", (2, 2), [*kept, gone], SWEEP.assign(speedup=1.0))
    data = {"cpus": 2, "repeat": 5, "verify_repeat": 7, "workloads": [d.to_json(outcome)]}
    (tmp_path / "results.json").write_text(json.dumps(data))
    (rescored,), repeats, cpus = d.rescore(tmp_path)
    assert (repeats, cpus) == ((5, 7), 2)
    assert [(a.id, a.status, a.speedup) for a in rescored.advice] == [
        (a.id, "confirmed", 1.5) for a in given
    ]
    assert rescored.table is not None and len(rescored.table) == len(SWEEP)


def test_a_saved_run_that_is_not_one_is_refused_in_one_line(tmp_path):
    cases = {
        "cut.json": '{"workloads": [',  # cut short while written
        "list.json": "[1, 2]",
        "none.json": '{"cpus": 2}',
        "bare.json": '{"workloads": []}',  # no CPUs or repeats to combine it by
        "bad.json": '{"cpus": 2, "repeat": 3, "workloads": [{"name": "w"}]}',
        "forged\x1b[2J.json": "{",  # a name that would clear the terminal
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(SystemExit) as refused:
            d.combine([tmp_path / name])
        message = str(refused.value.code)
        assert message.startswith(f"{printable(tmp_path / name)}: ") and "\n" not in message
        assert "\x1b" not in message
    with pytest.raises(SystemExit, match="not a saved run"):
        d.read_results(tmp_path / "missing.json")
