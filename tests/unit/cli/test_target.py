"""Splitting a command line into tftrace's options and the workload's."""

from __future__ import annotations

import pytest

from tftrace.cli import build_parser
from tftrace.target import split_target


@pytest.fixture(scope="module")
def record_parser():
    return build_parser()[1]["record"]


@pytest.mark.parametrize(
    ("argv", "own", "target"),
    [
        (["train.py", "--lr", "3"], [], ["train.py", "--lr", "3"]),
        (
            ["-o", "out", "--name", "x", "t.py", "-o", "y"],
            ["-o", "out", "--name", "x"],
            ["t.py", "-o", "y"],
        ),
        (["--no-pyspy", "-m", "pkg.mod", "--flag"], ["--no-pyspy"], ["-m", "pkg.mod", "--flag"]),
        (["--delay=2", "t.py"], ["--delay=2"], ["t.py"]),
        (["--sample-hz", "50", "--", "-weird.py"], ["--sample-hz", "50"], ["-weird.py"]),
        (["--no-sampler"], ["--no-sampler"], []),
    ],
)
def test_split_target(record_parser, argv, own, target):
    assert split_target(record_parser, argv) == (own, target)
