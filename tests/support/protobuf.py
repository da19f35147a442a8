"""Kubernetes protobuf, written: enough to send what client-go sends (the magic, runtime.Unknown,
length-delimited and varint fields)."""

from __future__ import annotations

from runtimes.apimachinery import protowire


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes | int) -> bytes:
    """A varint field for an int, a length-delimited one for bytes."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def envelope(
    raw: bytes, api_version: str = "authorization.k8s.io/v1", kind: str = "SelfSubjectAccessReview"
) -> bytes:
    type_meta = field(1, api_version.encode()) + field(2, kind.encode())
    return (
        protowire.MAGIC
        + field(1, type_meta)
        + field(2, raw)
        + field(4, protowire.MEDIA_TYPE.encode())
    )
