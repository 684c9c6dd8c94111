"""The sampler's parsing of /proc/<pid>/task/<tid>/stat."""

from __future__ import annotations

import os

from tftrace.tracer.os_sampler import parse_stat


def test_parse_stat_with_awkward_thread_name():
    # A name may hold spaces and parentheses; fields are counted after the last ')'.
    fields = ["S"] + [str(i) for i in range(4, 53)]
    fields[14 - 3] = "250"  # utime
    fields[15 - 3] = "17"  # stime
    fields[22 - 3] = "9999"  # starttime
    fields[39 - 3] = "1"  # processor
    line = "1234 (my (odd) name) " + " ".join(fields) + "\n"
    assert parse_stat(line) == ("my (odd) name", "S", 250, 17, 9999, 1)


def test_parse_stat_on_a_real_thread():
    with open(f"/proc/self/task/{os.getpid()}/stat") as f:
        comm, state, utime, stime, starttime, cpu = parse_stat(f.read())
    with open(f"/proc/self/task/{os.getpid()}/comm") as f:
        assert comm == f.read().strip()
    assert state == "R"  # reading its own stat, it is running
    assert utime + stime > 0 and starttime > 0 and cpu in os.sched_getaffinity(0)
