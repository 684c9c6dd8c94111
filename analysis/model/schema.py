"""The column contract of every table a ``Run`` holds, in one place, checked on load.

Times are int64 nanoseconds on the run's single axis (``Run.origin``: ns since the
recorder started, or since the profiler started for a bare trace). Repeated strings
are pandas categoricals (interned once). Optional integers (a flow id that an event
does not carry, a thread with no OS tid) are pandas' nullable ``Int64``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

CATEGORY = "category"
INT64 = "int64"
INT32 = "int32"
NULLABLE_INT = "Int64"
FLOAT = "float64"
STRING = "object"
BOOL = "bool"


@dataclass(frozen=True)
class Table:
    name: str
    columns: dict[str, str]
    doc: str


THREADS = Table(
    "threads",
    {
        "thread": INT32,  # row key, referenced by every other table
        "tid": NULLABLE_INT,  # OS thread id, where known
        "os_name": CATEGORY,  # /proc comm (15 bytes; Eigen workers show the creator's name)
        "line_id": NULLABLE_INT,  # trace line id (not an OS id), where the thread has a line
        "line_name": CATEGORY,
        "tf_name": CATEGORY,  # the name TF gave the thread, from the trace or the descriptor
        "python_name": CATEGORY,  # threading.Thread name, for Python threads
        "pool": CATEGORY,  # a Pool value
        "evidence": STRING,  # what decided the pool, in words
        "first_seen_ns": NULLABLE_INT,
        "last_seen_ns": NULLABLE_INT,
    },
    "one row per thread seen by any source",
)

EVENTS = Table(
    "events",
    {
        "thread": INT32,
        "name": CATEGORY,
        "op_name": CATEGORY,  # "MatMul" of "MatMul:_MklMatMul"; NaN for non-op events
        "op_type": CATEGORY,  # the op it implements: "MatMul" (vocabulary.op_type_of_kernel)
        "op_kernel": CATEGORY,  # the type as the trace names it: "_MklMatMul" with oneDNN on
        "kind": CATEGORY,  # an EventKind value
        "start_ns": INT64,
        "end_ns": INT64,
        "p": NULLABLE_INT,  # flow ids: _p (produced), _c (consumed), _pt/_ct (their types)
        "c": NULLABLE_INT,
        "pt": NULLABLE_INT,
        "ct": NULLABLE_INT,
        "step_num": NULLABLE_INT,  # N of a user's Trace(name, step_num=N) block
    },
    "one row per trace event on the host plane",
)

REGIONS = Table(
    "regions",
    {
        "thread": INT32,  # the worker that ran the closure
        "start_ns": INT64,
        "end_ns": INT64,
        "flow": NULLABLE_INT,  # the closure's id (_c of StartRegion = _p of its Record)
        "scheduled_ns": NULLABLE_INT,  # when Record was written
        "scheduled_by": NULLABLE_INT,  # the thread that wrote the Record
        "queue_ns": NULLABLE_INT,  # start_ns - scheduled_ns
    },
    "busy intervals of thread-pool workers, joined to the Record that scheduled them",
)

SAMPLES = Table(
    "samples",
    {
        "thread": INT32,
        "tid": INT64,
        "t_ns": INT64,
        "state": CATEGORY,  # R running/runnable, S sleeping, D disk, ...
        "cpu_ns": INT64,  # cumulative ns on CPU (schedstat)
        "wait_ns": INT64,  # cumulative ns runnable but waiting for a CPU (schedstat)
        "utime": INT64,  # cumulative clock ticks (stat)
        "stime": INT64,
        "slices": INT64,
        "cpu": INT32,  # the CPU it last ran on
    },
    "the OS thread sampler's series",
)

PYTHON = Table(
    "python",
    {
        "thread": INT32,
        "tid": INT64,
        "start_ns": INT64,
        "end_ns": INT64,
        "stack": CATEGORY,  # outermost first, ";"-separated "function (file:line)"
        "leaf": CATEGORY,
    },
    "py-spy: intervals over which a Python thread showed one stack",
)

TABLES = {t.name: t for t in (THREADS, EVENTS, REGIONS, SAMPLES, PYTHON)}

# The machine beside the workload (``Run.machine``, model/machine_samples.py): the OS sampler's
# machine readings, a few a second. Counters are cumulative ns, as the kernel keeps them; -1
# where a count was not there (a cgroup v2 without the cpu controller counts no periods).
MACHINE_CPUS = Table(
    "machine_cpus",
    {
        "t_ns": INT64,
        "cpu": INT32,  # every CPU of the machine; the process's are manifest.host.cpu_affinity
        "busy_ns": INT64,  # user + nice + system + irq + softirq (/proc/stat)
        "idle_ns": INT64,  # idle + iowait
        "steal_ns": INT64,  # taken by the hypervisor for other guests
    },
    "each CPU's time by kind, per machine reading",
)

MACHINE_PROCESSES = Table(
    "machine_processes",
    {
        "t_ns": INT64,
        "pid": INT64,
        "cpu_ns": INT64,  # user + system time of all its threads (/proc/<pid>/stat)
        "processor": INT32,  # the CPU its main thread last ran on (-1: not read)
    },
    "other processes' CPU time, per machine reading (only those whose CPU time grew)",
)

MACHINE_PROCESS_NAMES = Table(
    "machine_process_names",
    {
        "pid": INT64,
        "name": STRING,  # its comm (15 bytes); the last of its names
        "role": CATEGORY,  # "recorder", "workload-child" or "other"
        "started_ns": NULLABLE_INT,  # when it started, on the run's axis (often before 0)
        "first_seen_ns": INT64,
        "last_seen_ns": INT64,
    },
    "one row per process of machine_processes",
)

MACHINE_CGROUP = Table(
    "machine_cgroup",
    {
        "t_ns": INT64,
        "periods": INT64,  # quota enforcement periods (cpu.stat nr_periods)
        "throttled_periods": INT64,  # periods in which the cgroup used its quota up
        "throttled_ns": INT64,  # time its threads were held back for it
        "usage_ns": INT64,  # CPU time of the whole cgroup
    },
    "the workload's cgroup CPU counters, per machine reading (the cgroup whose quota binds)",
)
MACHINE_TABLES = {
    t.name: t for t in (MACHINE_CPUS, MACHINE_PROCESSES, MACHINE_PROCESS_NAMES, MACHINE_CGROUP)
}

# Computed from the tables above, not recorded, and exported beside them: the per-step table
# is what a long training's report summarises (the breakdown's categories, as shares).
STEPS = Table(
    "steps",
    {
        "step": INT64,  # from 1, over the whole trace
        "start_ns": INT64,
        "end_ns": INT64,
        "duration_ns": INT64,
        "batches": INT64,  # input elements the step fetched itself (0: none or unknown)
        "intra-op parallel": FLOAT,
        "op, intra idle": FLOAT,
        "waiting for a thread": FLOAT,
        "dispatch & executor": FLOAT,
        "python / host": FLOAT,
        "idle": FLOAT,
    },
    "one row per step (tf.function call or repeated annotation on the main thread), with the "
    "share of its wall time in each breakdown category; computed, not recorded",
)
DERIVED_TABLES = {STEPS.name: STEPS}

# A server's requests in the analysed window (``metrics/requests.py``), exported beside the
# tables only for a server: the shares of each request's latency in its five categories.
REQUESTS = Table(
    "requests",
    {
        "request": INT64,  # from 1, in the window
        "thread": INT32,  # the calling thread
        "function": CATEGORY,
        "start_ns": INT64,
        "end_ns": INT64,
        "latency_ns": INT64,
        "eigen wait": FLOAT,
        "running": FLOAT,
        "inter-op wait": FLOAT,
        "python": FLOAT,
        "tf runtime": FLOAT,
    },
    "a server's requests that start in the analysed window (tf.function calls or "
    "Trace(step_num=) blocks on any Python thread), with the share of each request's latency "
    "in each category; computed, not recorded, and written only for a server",
)


class SchemaError(ValueError):
    """A table does not match its declared columns (a bug, or a foreign input)."""


def empty(table: Table) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in table.columns.items()})


def validate(df: pd.DataFrame, table: Table) -> pd.DataFrame:
    """Check ``df`` has exactly the declared columns with the declared dtypes."""
    if list(df.columns) != list(table.columns):
        raise SchemaError(
            f"{table.name}: columns {list(df.columns)} != declared {list(table.columns)}"
        )
    for column, dtype in table.columns.items():
        actual = str(df[column].dtype)
        if actual != dtype:
            raise SchemaError(f"{table.name}.{column}: dtype {actual}, declared {dtype}")
    return df
