"""Kubernetes' protobuf encoding, read: enough for the built-in kinds kubectl sends that way.

client-go encodes built-in kinds as protobuf (kubectl's `auth can-i` posts its
SelfSubjectAccessReview as `application/vnd.kubernetes.protobuf`): the four bytes `k8s\\0`, then
a `runtime.Unknown` message (typeMeta {apiVersion, kind}, raw, contentEncoding, contentType)
whose `raw` is the object's own message. `decode` returns the object in its JSON shape, given a
`Schema` of the fields wanted (field number -> JSON name and either a nested schema or a scalar
kind); fields the schema does not name are skipped, as an older server skips newer fields.
Nesting is bounded by the schema and every length by the body, so a hostile body costs no more
than its size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Union

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
Scalar = str  # "string" | "bytes" | "bool" | "int"
Schema = dict[int, tuple[str, Union["Schema", Scalar]]]

# runtime.Unknown and runtime.TypeMeta (k8s.io/apimachinery/pkg/runtime/generated.proto).
TYPE_META: Schema = {1: ("apiVersion", "string"), 2: ("kind", "string")}
UNKNOWN: Schema = {
    1: ("typeMeta", TYPE_META),
    2: ("raw", "bytes"),
    3: ("contentEncoding", "string"),
    4: ("contentType", "string"),
}


class ProtobufError(ValueError):
    """The body is not the protobuf it claims to be."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ProtobufError("truncated or overlong varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field of one message, in order."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, at = _varint(data, at)
        elif wire == LENGTH:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise ProtobufError("a field is longer than the message")
            value, at = data[at : at + size], at + size
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if at + width > len(data):
                raise ProtobufError("truncated fixed-width field")
            value, at = int.from_bytes(data[at : at + width], "little"), at + width
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        if number == 0:
            raise ProtobufError("field number 0")
        yield number, wire, value


def message(data: bytes, schema: Schema) -> dict[str, Any]:
    """One message in its JSON shape: the fields `schema` names (the last one wins)."""
    out: dict[str, Any] = {}
    for number, wire, value in fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, dict):
            if wire != LENGTH or not isinstance(value, bytes):
                raise ProtobufError(f"{name} must be a message")
            out[name] = message(value, kind)
        elif kind in ("string", "bytes"):
            if wire != LENGTH or not isinstance(value, bytes):
                raise ProtobufError(f"{name} must be length-delimited")
            if kind == "bytes":
                out[name] = value
                continue
            try:
                out[name] = value.decode()
            except UnicodeDecodeError as exc:
                raise ProtobufError(f"{name} is not UTF-8") from exc
        elif kind == "bool":
            out[name] = bool(value)
        else:
            out[name] = value
    return out


def decode(body: bytes, schema: Schema) -> dict[str, Any]:
    """An object sent as Kubernetes protobuf, in its JSON shape (apiVersion and kind included)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic")
    envelope = message(body[len(MAGIC) :], UNKNOWN)
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {envelope['contentEncoding']!r}")
    obj = message(envelope.get("raw", b""), schema)
    type_meta = envelope.get("typeMeta") or {}
    return {
        "apiVersion": type_meta.get("apiVersion", ""),
        "kind": type_meta.get("kind", ""),
        **obj,
    }
