"""Effective schemas for forms: local references are resolved as jsonschema resolves them."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.console.forms.resolve import Unrenderable, deref, holds, pointer

ROOT: dict[str, Any] = {
    "$defs": {
        "rank": {"type": "integer", "minimum": 1},
        "a/b": {"type": "string"},
        "m~n": {"type": "boolean"},
        "with space": {"type": "number"},
        "anything": True,
        "scalar": 3,
    },
    "prefixItems": [{"type": "string"}, {"$ref": "#/$defs/rank"}],
}


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("#/$defs/rank", {"type": "integer", "minimum": 1}),
        ("#/$defs/a~1b", {"type": "string"}),
        ("#/$defs/m~0n", {"type": "boolean"}),
        ("#/$defs/with%20space", {"type": "number"}),
        ("#/prefixItems/0", {"type": "string"}),
        ("#/$defs/anything", {}),
    ],
)
def test_it_follows_local_references(ref: str, expected: dict[str, Any]) -> None:
    assert pointer(ROOT, ref) == expected


def test_it_follows_anchors() -> None:
    root = {"$defs": {"named": {"$anchor": "lora", "type": "object"}}}
    assert pointer(root, "#lora") == {"$anchor": "lora", "type": "object"}


def test_it_resolves_against_the_roots_own_id() -> None:
    root = {"$id": "https://example.com/params", "$defs": {"r": {"type": "integer"}}}
    assert pointer(root, "#/$defs/r") == {"type": "integer"}


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("https://example.com/s.json", "remote reference https://example.com/s.json"),
        ("#/$defs/nope", "unresolvable reference #/$defs/nope"),
        ("#/prefixItems/x", "unresolvable reference #/prefixItems/x"),
        ("#/$defs/scalar/x", "unresolvable reference #/$defs/scalar/x"),
        ("#nowhere", "unresolvable reference #nowhere"),
        ("#/prefixItems/-", "unresolvable reference #/prefixItems/-"),
        ("#/prefixItems/5", "unresolvable reference #/prefixItems/5"),
        ("#/$defs/scalar", "reference #/$defs/scalar is not a schema"),
    ],
)
def test_it_says_which_references_a_form_cannot_follow(ref: str, message: str) -> None:
    with pytest.raises(Unrenderable, match=f"^{message.replace('$', '[$]')}$"):
        pointer(ROOT, ref)


def test_it_reads_past_a_malformed_id() -> None:
    assert pointer({"$id": 5, "$defs": {"r": {"type": "string"}}}, "#/$defs/r") == {
        "type": "string"
    }


def test_it_merges_siblings_over_the_referenced_schema() -> None:
    node = deref({"$ref": "#/$defs/rank", "minimum": 4}, ROOT)
    assert node == {"type": "integer", "minimum": 4}


def test_it_decides_conditions_with_the_roots_definitions_and_without_formats() -> None:
    assert holds({"$ref": "#/$defs/rank"}, 2, ROOT)
    assert not holds({"$ref": "#/$defs/rank"}, 0, ROOT)
    # Formats are annotations when a form picks a branch, as they always were here.
    assert holds({"type": "string", "format": "email"}, "nobody", ROOT)
    assert not holds({"$ref": "#/$defs/nope"}, 1, ROOT)
