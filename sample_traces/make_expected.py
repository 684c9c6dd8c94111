"""Write RUN/expected.json: summary facts of a sample run, computed independently of tftrace.

Uses only the xplane protobuf schema shipped in the TensorFlow wheel of the interpreter
that runs it (so each sample is checked with its own TF version's schema) and plain json.
Nothing from tftrace is imported.

    <venv>/bin/python sample_traces/make_expected.py sample_traces/tf-X.Y
"""

import collections
import importlib
import json
import re
import sys
from pathlib import Path

_SCHEMA_MODULES = (
    "tensorflow.tsl.profiler.protobuf.xplane_pb2",
    "tsl.profiler.protobuf.xplane_pb2",
    "tensorflow.core.profiler.protobuf.xplane_pb2",
)


def _schema():
    errors = []
    for name in _SCHEMA_MODULES:
        try:
            return name, importlib.import_module(name)
        except ImportError as e:
            errors.append(f"{name}: {e}")
    raise SystemExit("no xplane_pb2 found:\n  " + "\n  ".join(errors))


def _stat_value(stat, plane):
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return plane.stat_metadata[stat.ref_value].name
    if kind == "bytes_value":
        return stat.bytes_value.hex()
    return getattr(stat, kind) if kind else None


def _plane_stats(plane):
    return {plane.stat_metadata[s.metadata_id].name: _stat_value(s, plane) for s in plane.stats}


_OP_EVENT = re.compile(r"^[^:\s]+:[^:\s]+$")  # `<op name>:<op type>`, e.g. MatMul:_MklMatMul


def host_facts(plane):
    lines_by_prefix = collections.Counter()
    events_by_prefix = collections.Counter()
    listener = collections.Counter()
    colon_events = 0
    op_events = 0
    aggregated = 0
    p_values, c_values = set(), set()
    first_ps, last_ps = None, None
    line_ids = []
    name_id_mismatch = []
    for line in plane.lines:
        prefix = line.name.split("/", 1)[0]
        lines_by_prefix[prefix] += 1
        events_by_prefix[prefix] += len(line.events)
        line_ids.append((line.id, line.name, len(line.events)))
        if "/" in line.name and line.name.split("/", 1)[1] != str(line.id):
            name_id_mismatch.append(line.name)
        for ev in line.events:
            name = plane.event_metadata[ev.metadata_id].name
            if name.startswith("ThreadpoolListener::"):
                listener[name] += 1
            if ":" in name:
                colon_events += 1
            if _OP_EVENT.match(name):
                op_events += 1
            stats = {plane.stat_metadata[s.metadata_id].name: s for s in ev.stats}
            if name == "ThreadpoolListener::Record" and "_p" in stats:
                p_values.add(_stat_value(stats["_p"], plane))
            if name == "ThreadpoolListener::StartRegion" and "_c" in stats:
                c_values.add(_stat_value(stats["_c"], plane))
            if ev.WhichOneof("data") == "num_occurrences":
                aggregated += 1
                continue
            start = line.timestamp_ns * 1000 + ev.offset_ps
            end = start + ev.duration_ps
            first_ps = start if first_ps is None else min(first_ps, start)
            last_ps = end if last_ps is None else max(last_ps, end)
    return {
        "lines": len(plane.lines),
        "lines_by_prefix": dict(sorted(lines_by_prefix.items())),
        "events_by_prefix": dict(sorted(events_by_prefix.items())),
        "events": sum(events_by_prefix.values()),
        "aggregated_events": aggregated,
        "threadpool_listener_events": {
            k: listener.get(k, 0)
            for k in (
                "ThreadpoolListener::Record",
                "ThreadpoolListener::StartRegion",
                "ThreadpoolListener::StopRegion",
            )
        },
        "other_threadpool_listener_names": sorted(
            k
            for k in listener
            if k
            not in (
                "ThreadpoolListener::Record",
                "ThreadpoolListener::StartRegion",
                "ThreadpoolListener::StopRegion",
            )
        ),
        "events_with_colon_in_name": colon_events,
        "op_events_name_colon_type": op_events,
        "distinct_record_p_values": len(p_values),
        "distinct_startregion_c_values": len(c_values),
        "startregion_c_values_without_record_p": len(c_values - p_values),
        "earliest_event_start_ns": first_ps / 1000 if first_ps is not None else None,
        "latest_event_end_ns": last_ps / 1000 if last_ps is not None else None,
        "earliest_event_start_ps": first_ps,
        "latest_event_end_ps": last_ps,
        "line_names_whose_suffix_differs_from_line_id": sorted(name_id_mismatch),
        "_line_ids": line_ids,
    }


def identity_facts(identity, host):
    threads = identity["threads"]
    by_tf_name = collections.Counter(t.get("tf_name") or "none" for t in threads)
    by_comm = collections.Counter(t.get("comm") or "" for t in threads)
    python_names = sorted({t["python_name"] for t in threads if t.get("python_name")})
    trace_ids = [t["trace_line_id"] for t in threads if t.get("trace_line_id") is not None]
    id_set = set(trace_ids)
    lines = host.pop("_line_ids") if host else []
    matched = [i for i, _, _ in lines if i in id_set]
    # TF <= 2.20 (seen on 2.16 and 2.18) truncates the thread id to 32 bits: line.id is the
    # low 32 bits (as unsigned), the name suffix the same bits as signed int32.
    low32 = {i & 0xFFFFFFFF for i in trace_ids}
    matched_low32 = [i for i, _, _ in lines if (i & 0xFFFFFFFF) in low32]
    joined = []
    for line_id, name, events in lines:
        owners = [t for t in threads if t.get("trace_line_id") == line_id]
        how = "exact"
        if not owners:
            how = "low32"
            owners = [
                t
                for t in threads
                if t.get("trace_line_id") is not None
                and t["trace_line_id"] & 0xFFFFFFFF == line_id & 0xFFFFFFFF
            ]
        joined.append(
            {
                "line_name": name,
                "line_id": line_id,
                "events": events,
                "match": how if owners else None,
                "identity_tids": [t["tid"] for t in owners],
                "identity_tf_names": [t.get("tf_name") for t in owners],
                "identity_comms": [t.get("comm") for t in owners],
                "identity_python_names": [t.get("python_name") for t in owners],
            }
        )
    return {
        "os_threads": len(threads),
        "os_threads_by_tf_name": dict(sorted(by_tf_name.items())),
        "os_threads_by_comm": dict(sorted(by_comm.items())),
        "python_names": python_names,
        "threads_with_trace_line_id": len(trace_ids),
        "duplicate_trace_line_ids": len(trace_ids) - len(id_set),
        "host_line_ids_in_identity": len(matched),
        "host_line_ids_not_in_identity": len(lines) - len(matched),
        "host_line_ids_in_identity_low32": len(matched_low32),
        "host_line_ids_not_in_identity_low32": len(lines) - len(matched_low32),
        "host_lines_joined_by_id": joined,
        "identity_errors": identity.get("errors", []),
    }


def main(run_dir: str) -> None:
    run = Path(run_dir)
    module_name, xplane_pb2 = _schema()
    import tensorflow as tf  # the schema import above already loaded it

    xplanes = sorted((run / "plugins" / "profile").glob("*/*.xplane.pb"))
    if len(xplanes) != 1:
        raise SystemExit(f"expected one xplane.pb under {run}, found {len(xplanes)}")
    space = xplane_pb2.XSpace()
    space.ParseFromString(xplanes[0].read_bytes())
    planes = {p.name: p for p in space.planes}
    host_plane = planes.get("/host:CPU")
    host = host_facts(host_plane) if host_plane is not None else None
    env_plane = planes.get("Task Environment")
    profile_start = _plane_stats(env_plane).get("profile_start_time") if env_plane else None
    identity = json.loads((run / "thread_identity.json").read_text())
    ident = identity_facts(identity, host)

    expected = {
        "generated_by": (
            "sample_traces/make_expected.py (TF's own xplane_pb2 + json; no tftrace code)"
        ),
        "tensorflow_version": tf.__version__,
        "schema_module": module_name,
        "xplane_file": str(xplanes[0].relative_to(run)),
        "planes": sorted(planes),
        "host_plane": host,
        "task_environment_profile_start_time_ns": profile_start,
        "identity": ident,
        "known_pool_sizes": {"intra_op": 2, "inter_op": 2, "source": "TF_NUM_*_THREADS env vars"},
    }
    (run / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(json.dumps(expected, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
