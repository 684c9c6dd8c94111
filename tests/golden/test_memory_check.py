"""A trace too large for the memory there is fails before it is read: one line with the sizes
and what to do, exit 2, and nothing of the run touched."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_RUN, quiet_env, tftrace_command
from tftrace.analysis.model.memory import (
    BYTES_PER_TRACE_BYTE,
    ENV_LIMIT,
    TraceTooLarge,
    available,
    check_fits,
    parse_size,
)


def test_sizes_parse():
    assert parse_size("2G") == 2 * 2**30
    assert parse_size("512M") == 512 * 2**20
    assert parse_size("1.5k") == 1536
    assert parse_size("1000") == 1000
    with pytest.raises(Exception, match="not a size"):
        parse_size("lots")


def test_the_least_limit_wins(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ENV_LIMIT, raising=False)
    free, _ = available()
    assert free is not None and free > 0  # this machine says what it has
    monkeypatch.setenv(ENV_LIMIT, "1M")
    assert available() == (2**20, ENV_LIMIT)
    check_fits(Path("small.xplane.pb"), int(2**20 / BYTES_PER_TRACE_BYTE))  # just fits
    with pytest.raises(TraceTooLarge, match=r"needs about .* record a shorter span"):
        check_fits(Path("big.xplane.pb"), 2**20)


def test_a_trace_too_large_is_one_line_and_exit_2(tmp_path: Path):
    import subprocess

    run = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, run)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    for command in (["analyze"], ["report"], ["export", "--format", "csv"]):
        proc = subprocess.run(
            tftrace_command(*command, run),
            capture_output=True,
            text=True,
            env=quiet_env(**{ENV_LIMIT: "100K"}),
        )
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tftrace: error: "), proc.stderr
        assert "needs about" in lines[0] and f"{ENV_LIMIT} leaves 102.4 kB" in lines[0]
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


@pytest.mark.parametrize(
    ("env", "advised"), [({}, "False"), ({"NUMPY_MADVISE_HUGEPAGE": "1"}, "True")]
)
def test_small_pages_turns_off_numpys_huge_page_advice_unless_the_user_set_it(env, advised):
    """In a fresh interpreter (it changes numpy for the whole process)."""
    probe = (
        "import numpy as np\n"
        "from tftrace.analysis.model.memory import small_pages\n"
        "small_pages()\n"
        "print(np._core.multiarray._get_madvise_hugepage())\n"
    )
    environ = {k: v for k, v in quiet_env().items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    done = subprocess.run(
        [sys.executable, "-c", probe], env={**environ, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [advised]
