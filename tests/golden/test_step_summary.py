"""Thousands of steps in a few figures: percentiles, slowest steps, outliers and trend, worked
out by hand on a built steps table, and shown in the terminal and HTML report instead of rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from conftest import SAMPLE_RUN
from tftrace.analysis.analyze import analyze
from tftrace.analysis.metrics.breakdown import CATEGORIES
from tftrace.analysis.metrics.steps import COLUMNS, Steps, summarize_steps
from tftrace.analysis.model.run import load
from tftrace.analysis.render.html_sections import steps_section
from tftrace.analysis.render.terminal import render_text
from tftrace.analysis.render.window_text import step_summary_lines

MS = 1_000_000


def _table() -> pd.DataFrame:
    # 40 steps: 10 ms for steps 1-20, 12 ms for 21-40, but step 7 takes 50 ms (in Python) and
    # step 33 takes 40 ms.
    ms = np.array([10.0] * 20 + [12.0] * 20)
    ms[6], ms[32] = 50.0, 40.0
    start = np.r_[0, np.cumsum(ms[:-1])] * MS
    table = pd.DataFrame(
        {
            "step": np.arange(1, 41),
            "start_ns": start.astype(np.int64),
            "end_ns": (start + ms * MS).astype(np.int64),
            "duration_ns": (ms * MS).astype(np.int64),
            "batches": 1,
        }
    )
    for c in CATEGORIES:
        table[c] = 0.0
    table["intra-op parallel"] = 1.0
    table.loc[6, ["intra-op parallel", "python / host"]] = [0.2, 0.8]
    return table[list(COLUMNS)]


def test_summary_by_hand():
    s = summarize_steps(_table())
    assert s is not None
    # Sorted: 19 x 10 ms, 19 x 12 ms, 40, 50: the median is 12 ms.
    assert s.p50_ms == 12.0
    # |ms - 12|: 19 x 0, 19 x 2, 28, 38: the MAD is 2 ms; outliers above 12 + 3 x 1.4826 x 2.
    assert s.outlier_above_ms == pytest.approx(12 + 3 * 1.4826 * 2)
    assert s.outliers == (7, 33)
    assert s.slowest[:2] == ((7, 50.0, "python / host"), (33, 40.0, "intra-op parallel"))
    assert [step for step, _, _ in s.slowest[2:]] == [21, 22, 23]  # ties: first come first
    assert s.trend == pytest.approx(12 / 10 - 1)  # steps 37-40 over steps 1-4


def test_no_trend_from_a_few_steps_and_no_outlier_in_steady_steps():
    table = _table().iloc[20:30].copy()  # ten 12 ms steps
    s = summarize_steps(table)
    assert s is not None
    assert s.trend is None and s.outliers == ()
    assert s.p50_ms == s.p99_ms == 12.0
    assert summarize_steps(table.iloc[:0]) is None


def test_lines_say_it():
    analysis = analyze(load(SAMPLE_RUN), window="all")
    many = dataclasses.replace(analysis, steps=Steps(analysis.steps.source, _table(), 40))
    lines = step_summary_lines(many)
    assert lines[0] == (
        "step time: p50 12.00 ms, p90 12.00 ms, p99 46.10 ms; "
        "the last tenth of the steps took 20% longer than the first tenth"
    )
    assert lines[1].startswith("slowest: step 7 50.00 ms (python / host), step 33 40.00 ms")
    assert lines[2] == "outliers: 2 step(s) above 20.90 ms (steps 7, 33)"


def test_terminal_and_html_summarise_instead_of_listing():
    analysis = analyze(load(SAMPLE_RUN), window="all")
    many = Steps(analysis.steps.source, _table(), 40)
    analysis = dataclasses.replace(analysis, steps=many)
    text = render_text(analysis)
    assert "outliers: 2 step(s) above 20.90 ms (steps 7, 33)" in text
    html = steps_section(analysis)
    assert "The 20 slowest of 40 steps" in html
    rows = html.split("<tbody>")[1]
    assert rows.index("<td>7</td>") < rows.index("<td>33</td>") < rows.index("<td>21</td>")
    assert "<td>1</td>" not in rows  # a fast step is not shown
    json_steps = analysis.to_json()["steps"]
    assert json_steps["summary"]["outliers"] == [7, 33]
    assert len(json_steps["table"]) == 40  # every step, in the JSON


def test_the_exported_steps_table_is_the_one_analyze_builds():
    from tftrace.analysis.model.schema import STEPS

    assert tuple(STEPS.columns) == COLUMNS
