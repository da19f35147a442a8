"""Kubernetes protobuf, read: a SelfSubjectAccessReview as kubectl sends it, and bodies that lie."""

from __future__ import annotations

import pytest

from runtimes.apimachinery import protowire
from tests.support.protobuf import envelope, field, varint

SCHEMA: protowire.Schema = {
    2: ("spec", {1: ("attributes", {2: ("verb", "string"), 5: ("resource", "string")})}),
    3: ("status", {1: ("allowed", "bool")}),
}


def test_it_decodes_a_review_into_its_json_shape() -> None:
    attributes = field(2, b"patch") + field(5, b"trainingruntimes") + field(9, b"ignored")
    raw = field(1, b"metadata skipped") + field(2, field(1, attributes)) + field(3, field(1, 1))
    assert protowire.decode(envelope(raw), SCHEMA) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"attributes": {"verb": "patch", "resource": "trainingruntimes"}},
        "status": {"allowed": True},
    }


def test_it_skips_fixed_width_fields_it_does_not_know() -> None:
    raw = varint(7 << 3 | 1) + bytes(8) + varint(8 << 3 | 5) + bytes(4) + field(3, field(1, 0))
    assert protowire.decode(envelope(raw), SCHEMA)["status"] == {"allowed": False}


@pytest.mark.parametrize(
    "body",
    [
        b"{}",  # JSON, not protobuf
        protowire.MAGIC + b"\x0a\xff\xff\xff\xff\x0f",  # a length past the end
        protowire.MAGIC + b"\x0a",  # a key and nothing after it
        protowire.MAGIC + b"\x0b",  # wire type 3 (groups)
        protowire.MAGIC + b"\x80" * 20,  # a varint that never ends
        envelope(field(2, b"\xff\xfe")),  # a message that is not one
        envelope(field(2, field(1, field(2, b"\xff")))),  # a string that is not UTF-8
        envelope(field(2, 5)),  # a varint where a message belongs
    ],
)
def test_it_refuses_bodies_that_are_not_what_they_claim(body: bytes) -> None:
    with pytest.raises(protowire.ProtobufError):
        protowire.decode(body, SCHEMA)
