"""The TF profiler's ``XSpace`` protobuf messages, without importing TensorFlow.

TensorFlow ships the classes as ``tensorflow.tsl.profiler.protobuf.xplane_pb2``, but importing
that module imports TensorFlow (seconds, and a few hundred MB). The schema is small and stable,
so it is declared here as a ``FileDescriptorProto`` built in Python, added to a private
descriptor pool (so it can never clash with TF's own ``tensorflow.profiler`` messages if both
are loaded in one process) and turned into classes by the protobuf runtime.

Field numbers and types are those of TF 2.21's ``tsl/profiler/protobuf/xplane.proto``; the wire
format is identical, so bytes written by TF parse here and back.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "tftrace.xplane"
FILE_NAME = "tftrace/xplane.proto"

_FDP = descriptor_pb2.FieldDescriptorProto
_OPTIONAL = _FDP.LABEL_OPTIONAL
_REPEATED = _FDP.LABEL_REPEATED

# (name, number, label, type, message type name or None, oneof index or None)
_Field = tuple[str, int, int, int, str | None, int | None]


def _scalar(name: str, number: int, type_: int, oneof: int | None = None) -> _Field:
    return (name, number, _OPTIONAL, type_, None, oneof)


def _repeated(name: str, number: int, type_: int, message: str | None = None) -> _Field:
    return (name, number, _REPEATED, type_, message, None)


_INT64, _UINT64, _DOUBLE = _FDP.TYPE_INT64, _FDP.TYPE_UINT64, _FDP.TYPE_DOUBLE
_STRING, _BYTES, _MESSAGE = _FDP.TYPE_STRING, _FDP.TYPE_BYTES, _FDP.TYPE_MESSAGE

_MESSAGES: dict[str, tuple[list[_Field], list[str]]] = {
    "XSpace": (
        [
            _repeated("planes", 1, _MESSAGE, "XPlane"),
            _repeated("errors", 2, _STRING),
            _repeated("warnings", 3, _STRING),
            _repeated("hostnames", 4, _STRING),
        ],
        [],
    ),
    "XPlane": (
        [
            _scalar("id", 1, _INT64),
            _scalar("name", 2, _STRING),
            _repeated("lines", 3, _MESSAGE, "XLine"),
            _repeated("event_metadata", 4, _MESSAGE, "XPlane.EventMetadataEntry"),
            _repeated("stat_metadata", 5, _MESSAGE, "XPlane.StatMetadataEntry"),
            _repeated("stats", 6, _MESSAGE, "XStat"),
        ],
        [],
    ),
    "XLine": (
        [
            _scalar("id", 1, _INT64),
            _scalar("display_id", 10, _INT64),
            _scalar("name", 2, _STRING),
            _scalar("display_name", 11, _STRING),
            _scalar("timestamp_ns", 3, _INT64),
            _scalar("duration_ps", 9, _INT64),
            _repeated("events", 4, _MESSAGE, "XEvent"),
        ],
        [],
    ),
    "XEvent": (
        [
            _scalar("metadata_id", 1, _INT64),
            _scalar("offset_ps", 2, _INT64, oneof=0),
            _scalar("num_occurrences", 5, _INT64, oneof=0),
            _scalar("duration_ps", 3, _INT64),
            _repeated("stats", 4, _MESSAGE, "XStat"),
        ],
        ["data"],
    ),
    "XStat": (
        [
            _scalar("metadata_id", 1, _INT64),
            _scalar("double_value", 2, _DOUBLE, oneof=0),
            _scalar("uint64_value", 3, _UINT64, oneof=0),
            _scalar("int64_value", 4, _INT64, oneof=0),
            _scalar("str_value", 5, _STRING, oneof=0),
            _scalar("bytes_value", 6, _BYTES, oneof=0),
            _scalar("ref_value", 7, _UINT64, oneof=0),
        ],
        ["value"],
    ),
    "XEventMetadata": (
        [
            _scalar("id", 1, _INT64),
            _scalar("name", 2, _STRING),
            _scalar("display_name", 4, _STRING),
            _scalar("metadata", 3, _BYTES),
            _repeated("stats", 5, _MESSAGE, "XStat"),
            _repeated("child_id", 6, _INT64),
        ],
        [],
    ),
    "XStatMetadata": (
        [
            _scalar("id", 1, _INT64),
            _scalar("name", 2, _STRING),
            _scalar("description", 3, _STRING),
        ],
        [],
    ),
}

# XPlane's two maps: map<int64, XEventMetadata> and map<int64, XStatMetadata>.
_MAP_ENTRIES = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}


def _add_fields(message: descriptor_pb2.DescriptorProto, fields: list[_Field]) -> None:
    for name, number, label, type_, type_name, oneof in fields:
        field = message.field.add(name=name, number=number, label=label, type=type_)
        if type_name is not None:
            field.type_name = f".{PACKAGE}.{type_name}"
        if oneof is not None:
            field.oneof_index = oneof


def _map_entry(parent: descriptor_pb2.DescriptorProto, name: str, value: str) -> None:
    """A map field is a repeated message ``{key = 1; value = 2}`` flagged ``map_entry``."""
    entry = parent.nested_type.add(name=name)
    entry.options.map_entry = True
    _add_fields(
        entry,
        [
            _scalar("key", 1, _INT64),
            ("value", 2, _OPTIONAL, _MESSAGE, value, None),
        ],
    )


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The schema as a ``FileDescriptorProto`` (proto3, package ``tftrace.xplane``)."""
    fdp = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, package=PACKAGE, syntax="proto3")
    for name, (fields, oneofs) in _MESSAGES.items():
        message = fdp.message_type.add(name=name)
        _add_fields(message, fields)
        for oneof in oneofs:
            message.oneof_decl.add(name=oneof)
        if name == "XPlane":
            for entry, value in _MAP_ENTRIES.items():
                _map_entry(message, entry, value)
    return fdp


def _build_classes() -> dict[str, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor_proto())
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
        for name in _MESSAGES
    }


_CLASSES = _build_classes()

# The classes are built at run time, so type checkers see them as Any.
XSpace: Any = _CLASSES["XSpace"]
XPlane: Any = _CLASSES["XPlane"]
XLine: Any = _CLASSES["XLine"]
XEvent: Any = _CLASSES["XEvent"]
XStat: Any = _CLASSES["XStat"]
XEventMetadata: Any = _CLASSES["XEventMetadata"]
XStatMetadata: Any = _CLASSES["XStatMetadata"]

__all__ = [
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XStat",
    "XStatMetadata",
    "file_descriptor_proto",
]
