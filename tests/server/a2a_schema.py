"""The A2A 1.0 JSON Schema of a message of the protocol (`lf.a2a.v1`), derived from the
specification's proto as the 1.x a2a-sdk ships it compiled, under the rules of the
specification's own generator (`scripts/proto_to_json_schema.sh` in a2aproject/A2A, which
runs bufbuild's protoc-gen-jsonschema and publishes `a2a.json`): an object per message,
its fields under their JSON names (and their proto names, as `patternProperties`), no other
property (`additionalProperties: false`), protobuf's JSON mapping for scalars, enums, maps
and well-known types. One rule is added: a field the proto marks
`(google.api.field_behavior) = REQUIRED` is required."""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2
from google.api import field_behavior_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Empty": {"type": "object", "maxProperties": 0},
}
_INTEGER = {"type": "integer"}
_INTEGER_64 = {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]+$"}]}
T = FieldDescriptor
_SCALARS: dict[int, dict[str, Any]] = {
    T.TYPE_STRING: {"type": "string"},
    T.TYPE_BYTES: {"type": "string"},
    T.TYPE_BOOL: {"type": "boolean"},
    T.TYPE_DOUBLE: {"type": "number"},
    T.TYPE_FLOAT: {"type": "number"},
    **{kind: _INTEGER for kind in (T.TYPE_INT32, T.TYPE_SINT32, T.TYPE_SFIXED32)},
    **{kind: _INTEGER for kind in (T.TYPE_UINT32, T.TYPE_FIXED32)},
    **{kind: _INTEGER_64 for kind in (T.TYPE_INT64, T.TYPE_SINT64, T.TYPE_SFIXED64)},
    **{kind: _INTEGER_64 for kind in (T.TYPE_UINT64, T.TYPE_FIXED64)},
}
REQUIRED = field_behavior_pb2.REQUIRED


def schema_of(message: str) -> dict[str, Any]:
    """The JSON Schema of `lf.a2a.v1.<message>`, e.g. "AgentCard"."""
    definitions: dict[str, dict[str, Any]] = {}
    root = a2a_pb2.DESCRIPTOR.message_types_by_name[message]
    _define(root, definitions)
    return {"$schema": DIALECT, "$ref": f"#/$defs/{root.full_name}", "$defs": definitions}


def _define(message: Descriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A reference to `message`'s schema, defined in `definitions` on first use."""
    if message.full_name in _WELL_KNOWN:
        return _WELL_KNOWN[message.full_name]
    reference = {"$ref": f"#/$defs/{message.full_name}"}
    if message.full_name in definitions:
        return reference
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    definitions[message.full_name] = schema  # before its fields: messages may recurse
    properties: dict[str, Any] = {}
    patterns: dict[str, Any] = {}
    required: list[str] = []
    for field in message.fields:
        value = _field(field, definitions)
        properties[field.json_name] = value
        if field.name != field.json_name:
            patterns[f"^({field.name})$"] = value
        if REQUIRED in field.GetOptions().Extensions[field_behavior_pb2.field_behavior]:
            required.append(field.json_name)
    schema["properties"] = properties
    if patterns:
        schema["patternProperties"] = patterns
    if required:
        schema["required"] = required
    return reference


def _field(field: FieldDescriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        values = _single(entry.fields_by_name["value"], definitions)
        keys = {"type": "string"}
        return {"type": "object", "propertyNames": keys, "additionalProperties": values}
    single = _single(field, definitions)
    return {"type": "array", "items": single} if field.is_repeated else single


def _single(field: FieldDescriptor, definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if field.message_type is not None:
        return _define(field.message_type, definitions)
    if field.enum_type is not None:
        names = [value.name for value in field.enum_type.values]
        return {"anyOf": [{"enum": names}, {"type": "integer"}]}
    return _SCALARS[field.type]
