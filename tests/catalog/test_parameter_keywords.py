"""Parameter schemas' regular expressions run on RE2, never on Python's backtracking re."""

from __future__ import annotations

import time
from typing import Any

import jsonschema._keywords
import jsonschema._utils
import pytest
from jsonschema import Draft202012Validator

from runtimes.catalog.parameter_keywords import FORMAT_CHECKER, ParameterValidator
from runtimes.catalog.parameters import compiled_validator, parameter_errors

REDOS = "^(a+)+$"
ATTACK = "a" * 28 + "!"

# Every keyword that matches a schema regex, in one schema.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "labels": {
            "type": "object",
            "patternProperties": {"^x-": {"type": "integer"}},
            "additionalProperties": False,
        },
        "tags": {
            "type": "object",
            "patternProperties": {"^t[0-9]$": True},
            "unevaluatedProperties": {"type": "string"},
        },
        "matcher": {"type": "string", "format": "regex"},
    },
}
VALUES = [
    {"name": "abc", "labels": {"x-a": 1}, "tags": {"t1": 5, "other": "s"}, "matcher": "^a+$"},
    {"name": "ABC", "labels": {"x-a": "1", "y": 2}, "tags": {"other": 3}, "matcher": "[a-"},
    {"name": 1, "labels": [], "tags": {"t10": 1}},
]


class _Trap:
    """Stands in for `re` inside jsonschema: any call means a user regex hit the backtracker."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"jsonschema called re.{name} on a parameter schema")


@pytest.fixture
def no_backtracking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonschema._keywords, "re", _Trap())
    monkeypatch.setattr(jsonschema._utils, "re", _Trap())


def _messages(validator: Any, value: Any) -> list[tuple[list[Any], str]]:
    return sorted((list(e.absolute_path), e.message) for e in validator.iter_errors(value))


@pytest.mark.usefixtures("no_backtracking")
@pytest.mark.parametrize("value", VALUES)
def test_it_matches_every_schema_regex_on_re2(value: Any) -> None:
    ours = ParameterValidator(SCHEMA, format_checker=FORMAT_CHECKER)
    assert bool(list(ours.iter_errors(value))) is (value is not VALUES[0])


@pytest.mark.parametrize("value", VALUES)
def test_it_agrees_with_jsonschema_on_patterns_re2_can_run(value: Any) -> None:
    ours = ParameterValidator(SCHEMA, format_checker=FORMAT_CHECKER)
    theirs = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
    assert _messages(ours, value) == _messages(theirs, value)


def test_it_checks_the_regex_format_by_compiling_under_re2() -> None:
    validator = compiled_validator(SCHEMA)
    assert validator.is_valid({"matcher": "^[a-z]+$"})
    assert not validator.is_valid({"matcher": "(a)\\1"})  # Python's re would take it
    assert not validator.is_valid({"matcher": "(?=a)"})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"name": {"type": "string", "pattern": REDOS}}},
        {"type": "object", "properties": {"name": {"patternProperties": {REDOS: False}}}},
        {
            "type": "object",
            "properties": {
                "name": {"patternProperties": {REDOS: True}, "additionalProperties": False}
            },
        },
        {
            "type": "object",
            "properties": {
                "name": {"patternProperties": {REDOS: True}, "unevaluatedProperties": False}
            },
        },
    ],
)
def test_it_answers_the_redos_pattern_at_once(schema: dict[str, Any]) -> None:
    value = {"name": ATTACK if "pattern" in schema["properties"]["name"] else {ATTACK: 1}}
    started = time.perf_counter()
    parameter_errors(schema, value, "parameters")
    assert time.perf_counter() - started < 0.05


def test_it_fails_closed_on_a_stored_pattern_re2_cannot_run() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "(a)\\1"}}}
    [error] = parameter_errors(schema, {"code": "aa"}, "parameters")
    assert error.field == "parameters.code"
    assert "the backreference \\1" in error.message
    # As a patternProperties name it matches nothing, so the name is an unknown property.
    schema = {
        "type": "object",
        "patternProperties": {"(?=a)": True},
        "additionalProperties": False,
    }
    [error] = parameter_errors(schema, {"a": 1}, "parameters")
    assert (error.field, error.reason) == ("parameters.a", "FieldValueForbidden")


def test_it_reports_a_stored_ref_loop_instead_of_crashing() -> None:
    # Admission refuses these; one stored before that rule must still give an error, not a 500.
    schema = {
        "type": "object",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "properties": {"depth": {"$ref": "#/$defs/a"}},
    }
    [error] = parameter_errors(schema, {"depth": 1}, "parameters")
    assert error.field == "parameters"
    assert "refers to itself without end" in error.message
