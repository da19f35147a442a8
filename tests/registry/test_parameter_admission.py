"""Admission keeps a parameter schema's validation bounded: RE2 patterns, no $ref loops, depth."""

from __future__ import annotations

from typing import Any

import jsonschema._keywords
import jsonschema._utils
import pytest

from runtimes.apimachinery import errors
from runtimes.registry.trainingruntime.parameter_schema import FREE_FORM_MAX_DEPTH
from runtimes.registry.trainingruntime.validation import validate_spec
from tests.invalid_manifests import base, stub_catalog

CATALOG = stub_catalog()


def _spec(parameters: dict[str, Any], defaults: Any = None) -> dict[str, Any]:
    spec = base()["spec"]
    spec["parameters"] = parameters
    spec["defaults"] = {"parameters": defaults} if defaults is not None else {}
    return spec


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        ("^(a)\\1$", "the backreference \\1"),
        ("^(?=.*[0-9])", "the lookahead (?=…)"),
        ("(?<!a)b", "the negative lookbehind (?<!…)"),
        ("a++", "the possessive quantifier ++"),
    ],
)
def test_it_refuses_a_pattern_re2_cannot_run_naming_field_and_fix(
    pattern: str, construct: str
) -> None:
    [cause] = validate_spec(_spec(_object(x={"type": "string", "pattern": pattern})), CATALOG)
    assert cause.field == "spec.parameters.properties.x.pattern"
    assert cause.reason == "FieldValueInvalid"
    assert construct in cause.message
    assert cause.fix.startswith(f"{cause.field}: Drop")
    status = errors.invalid("TrainingRuntime", "nodus.dev", "r", [cause]).status()
    assert "spec.parameters.properties.x.pattern: Drop" in status["fix"]
    assert status["details"]["causes"][0]["field"] == cause.field


def test_it_refuses_a_pattern_properties_name_re2_cannot_run() -> None:
    schema = _object(tags={"type": "object", "patternProperties": {"^(?!x-)": {}}})
    [cause] = validate_spec(_spec(schema), CATALOG)
    assert cause.field == "spec.parameters.properties.tags.patternProperties[^(?!x-)]"
    assert "negative lookahead" in cause.message


def test_it_accepts_the_redos_pattern_which_re2_runs_in_linear_time() -> None:
    assert validate_spec(_spec(_object(x={"type": "string", "pattern": "^(a+)+$"})), CATALOG) == []


def test_it_never_runs_a_schema_regex_on_python_re(monkeypatch: pytest.MonkeyPatch) -> None:
    class Trap:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"re.{name}")

    monkeypatch.setattr(jsonschema._keywords, "re", Trap())
    monkeypatch.setattr(jsonschema._utils, "re", Trap())
    schema = _object(
        name={"type": "string", "pattern": "^[a-z]+$"},
        tags={"type": "object", "patternProperties": {"^t": {}}, "additionalProperties": False},
    )
    assert validate_spec(_spec(schema, {"name": "ok", "tags": {"t1": 1}}), CATALOG) == []


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ({"type": "object", "$ref": "#"}, "spec.parameters[$ref]"),
        (
            {
                "type": "object",
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                "properties": {"depth": {"$ref": "#/$defs/a"}},
            },
            "spec.parameters[$defs].a[$ref]",
        ),
        (
            {"type": "object", "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}},
            "spec.parameters[$defs].a.allOf[0][$ref]",
        ),
        (
            {"type": "object", "$defs": {"a": {"$anchor": "x", "anyOf": [{"$ref": "#x"}]}}},
            "spec.parameters[$defs].a.anyOf[0][$ref]",
        ),
        (
            {"type": "object", "$defs": {"c": {"$id": "urn:c", "not": {"$ref": "#"}}}},
            "spec.parameters[$defs].c.not[$ref]",
        ),
    ],
    ids=["self", "indirect", "allOf", "anchor", "id-scope"],
)
def test_it_refuses_ref_loops_at_the_ref_that_closes_them(schema: Any, field: str) -> None:
    [cause] = validate_spec(_spec(schema), CATALOG)
    assert (cause.field, cause.reason) == (field, "FieldValueInvalid")
    assert "loops back on itself" in cause.message
    assert "Break the loop" in cause.fix


def test_it_keeps_recursion_through_properties_and_refs_that_end() -> None:
    tree = {
        "type": "object",
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            },
            "a": {"$ref": "#/$defs/b"},
            "b": {"type": "integer"},
        },
        "properties": {"root": {"$ref": "#/$defs/node"}, "n": {"$ref": "#/$defs/a"}},
    }
    defaults = {"root": {"children": [{"children": []}]}, "n": 1}
    assert validate_spec(_spec(tree, defaults), CATALOG) == []


def test_it_refuses_a_local_ref_to_nothing() -> None:
    [cause] = validate_spec(_spec(_object(x={"$ref": "#/$defs/missing"})), CATALOG)
    assert cause.field == "spec.parameters.properties.x[$ref]"
    assert "refers to nothing in this schema" in cause.message


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_it_bounds_the_depth_of_the_free_form_fields() -> None:
    # The schema object is one level, so its x-deep member may have one level less.
    fits = {"type": "object", "x-deep": _deep(FREE_FORM_MAX_DEPTH - 1)}
    assert validate_spec(_spec(fits), CATALOG) == []
    [cause] = validate_spec(
        _spec({"type": "object", "x-deep": _deep(FREE_FORM_MAX_DEPTH)}), CATALOG
    )
    assert cause.field == "spec.parameters"
    assert f"must nest at most {FREE_FORM_MAX_DEPTH} levels" in cause.message
    assert validate_spec(_spec({"type": "object"}, _deep(FREE_FORM_MAX_DEPTH)), CATALOG) == []
    [cause] = validate_spec(_spec({"type": "object"}, _deep(FREE_FORM_MAX_DEPTH + 1)), CATALOG)
    assert cause.field == "spec.defaults.parameters"
