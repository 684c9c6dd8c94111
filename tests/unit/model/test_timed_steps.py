"""The step timer's file (``workload/steps.json``) read without trusting it."""

from __future__ import annotations

import json
from pathlib import Path

from tftrace.analysis.model.timed_steps import read_timed_steps


def test_the_step_timer_file_is_read_without_trusting_it(tmp_path: Path):
    (tmp_path / "workload").mkdir()
    good = ["tf.function", "train_step", None, 5, 1_000, 2_000, 0, 9]
    rows = [good, ["tf.function", "x", None, 5, "soon", 2, 0, 0], [1, 2], good[:]]
    path = tmp_path / "workload" / "steps.json"
    path.write_text(json.dumps({"main_thread": 5, "rows": rows}))
    missing: list[str] = []
    frame = read_timed_steps(tmp_path, 500, missing)
    assert len(frame) == 2 and frame["start_ns"].tolist() == [500, 500]
    assert frame.attrs["main_thread"] == 5
    assert missing == [
        "step timer: 2 of 4 records left out (steps.json: rows[1]: not [kind, name, step, "
        "thread, 4 clock readings])"
    ]
    path.write_text("[1, 2")
    broken: list[str] = []
    assert read_timed_steps(tmp_path, 0, broken).empty and "unreadable" in broken[0]
    path.unlink()
    absent: list[str] = []
    assert read_timed_steps(tmp_path, 0, absent).empty and absent == []
