"""Job parameters against a runtime's schema: formats are checked, not only types; each schema
is compiled once."""

from __future__ import annotations

import json
import math
from typing import Any

from runtimes.catalog.parameters import (
    VALIDATORS_MAX,
    _compiled,
    compiled_validator,
    parameter_errors,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "startAt": {"type": "string", "format": "date-time"},
        "callback": {"type": "string", "format": "uri"},
        "owner": {"type": "string", "format": "email"},
    },
}


def test_it_refuses_values_that_break_their_format() -> None:
    errors = parameter_errors(
        SCHEMA, {"startAt": "yesterday", "callback": "not a uri", "owner": "nobody"}, "parameters"
    )
    assert sorted(e.field for e in errors) == [
        "parameters.callback",
        "parameters.owner",
        "parameters.startAt",
    ]


def test_it_accepts_well_formed_values() -> None:
    good = {
        "startAt": "2026-12-02T10:40:51Z",
        "callback": "https://hooks.example.com/done",
        "owner": "alice@example.com",
    }
    assert parameter_errors(SCHEMA, good, "parameters") == []


def test_it_compiles_each_schema_once() -> None:
    schema = {"type": "object", "properties": {"epochs": {"type": "integer", "minimum": 1}}}
    first = compiled_validator(schema)
    assert compiled_validator(json.loads(json.dumps(schema))) is first
    assert compiled_validator(schema, check_formats=False) is not first
    assert compiled_validator({**schema, "required": ["epochs"]}) is not first


def test_it_compiles_from_its_own_copy_of_the_schema() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"r": {"type": "integer"}}}
    validator = compiled_validator(schema)
    schema["properties"]["r"]["type"] = "string"
    assert validator.is_valid({"r": 8})
    assert not compiled_validator(schema).is_valid({"r": 8})


def test_it_tells_key_orders_apart_so_errors_keep_their_order() -> None:
    integer_first = {"type": "integer", "minimum": 5}
    minimum_first = {"minimum": 5, "type": "integer"}
    assert compiled_validator(integer_first) is not compiled_validator(minimum_first)
    messages = [e.message for e in parameter_errors(minimum_first, 2.5, "p")]
    assert messages == [
        "Invalid value: 2.5: must be greater than or equal to 5",
        "Invalid value: 2.5: must be of type integer",
    ]


def test_it_tells_non_finite_numbers_from_null() -> None:
    # orjson writes both as null; the validator must still see the schema it was given.
    bounded = {"type": "number", "maximum": None}
    unbounded = {"type": "number", "maximum": math.inf}
    assert compiled_validator(bounded).schema == bounded
    assert compiled_validator(unbounded).schema == unbounded
    assert compiled_validator(unbounded).is_valid(1e300)
    assert not compiled_validator({"const": math.nan}).is_valid(None)
    assert compiled_validator({"const": None}).is_valid(None)


def test_it_compiles_what_orjson_cannot_write_for_one_call() -> None:
    deep: dict[str, Any] = {}
    for _ in range(300):
        deep = {"not": deep}
    assert compiled_validator(deep) is not compiled_validator(deep)
    assert compiled_validator({1: "a"}).schema == {1: "a"}


def test_it_keeps_a_bounded_number_of_validators() -> None:
    for n in range(VALIDATORS_MAX + 10):
        compiled_validator({"type": "integer", "minimum": n})
    assert _compiled.cache_info().currsize <= VALIDATORS_MAX


def test_it_resolves_local_references() -> None:
    schema = {"$defs": {"rank": {"type": "integer"}}, "properties": {"r": {"$ref": "#/$defs/rank"}}}
    errors = parameter_errors(schema, {"r": "8"}, "parameters")
    assert [(e.field, e.message) for e in errors] == [
        ("parameters.r", 'Invalid value: "8": must be of type integer')
    ]
    assert parameter_errors(schema, {"r": 8}, "parameters") == []
