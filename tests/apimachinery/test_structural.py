"""Structural checks generated from schema nodes, on small hand-made schemas."""

from __future__ import annotations

from runtimes.apimachinery.schema_nodes import (
    Field,
    integer,
    obj,
    string,
    whole_floats_as_integers,
)
from runtimes.apimachinery.structural import expected_type, structural_errors

PAIR = obj("A pair.", "", ("a", "b"), a=string("A."), b=string("B."))


def _causes(value: object, node: Field) -> list[tuple[str, str, str]]:
    return [(e.field, e.reason, e.message) for e in structural_errors(value, node, "spec.x")]


def test_it_reports_duplicates_of_a_multi_key_list_map_at_the_item() -> None:
    node = Field("array", "Pairs.", items=PAIR, list_type="map", list_keys=("a", "b"))
    assert _causes([{"a": "1", "b": "2"}, {"a": "1", "b": "3"}], node) == []
    assert _causes([{"a": "1", "b": "2"}, {"a": "1", "b": "2"}], node) == [
        ("spec.x[1]", "FieldValueDuplicate", 'Duplicate value: {"a":"1","b":"2"}')
    ]


def test_it_reports_duplicates_of_a_single_key_list_map_at_the_key() -> None:
    node = Field("array", "Pairs.", items=PAIR, list_type="map", list_keys=("a",))
    causes = _causes([{"a": "1", "b": "2"}, {"a": "1", "b": "3"}], node)
    assert causes == [("spec.x[1].a", "FieldValueDuplicate", 'Duplicate value: "1"')]


def test_it_words_type_errors_as_kube_openapi_with_advice_in_fix() -> None:
    errors = structural_errors({"k": [1]}, integer("N."), "spec.x")
    assert [(e.field, e.reason, e.message, e.fix) for e in errors] == [
        (
            "spec.x",
            "FieldValueTypeInvalid",
            'Invalid value: "object": spec.x in body must be of type integer: "object"',
            "spec.x must be an integer.",
        )
    ]
    # Values are named by their JSON type: a whole number is an integer, else a number.
    assert _causes(3, string("S.")) == [
        (
            "spec.x",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": spec.x in body must be of type string: "integer"',
        )
    ]
    assert _causes(1.5, Field("boolean"))[0][2].endswith('must be of type boolean: "number"')
    # A quantity is published as int-or-string.
    assert _causes(True, Field("quantity"))[0][2].endswith(
        'must be of type integer,string: "boolean"'
    )


def test_it_counts_null_as_unset_but_not_inside_lists() -> None:
    assert _causes({"a": None, "b": "x"}, PAIR) == [
        ("spec.x.a", "FieldValueRequired", "Required value: A.")
    ]
    node = Field("array", "Strings.", items=string("S."))
    assert _causes(["x", None], node)[0][:2] == ("spec.x[1]", "FieldValueRequired")


def test_it_checks_map_values_at_dotted_keys_as_kube_openapi_names_them() -> None:
    node = Field("map", "Times.", values=Field("number", "T.", minimum=0, exclusive_minimum=True))
    assert _causes({"h100-80g": 1.5, "l4-24g": 0}, node) == [
        ("spec.x.l4-24g", "FieldValueInvalid", "Invalid value: 0: must be greater than 0")
    ]
    assert _causes({"a": "fast"}, node) == [
        (
            "spec.x.a",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.x.a in body must be of type number: "string"',
        )
    ]


def test_it_describes_expected_types_for_people() -> None:
    assert expected_type(Field("array", items=string(""))) == "must be a list of strings"
    assert expected_type(Field("map", values=Field("number"))) == "must be a map of numbers"
    assert expected_type(integer("")) == "must be an integer"
    assert expected_type(Field("boolean")) == "must be a boolean"


def test_a_whole_float_within_the_safe_range_is_an_integer() -> None:
    # kube-openapi: swag.IsFloat64AJSONInteger, whole and within -(2^53-1) to 2^53-1.
    for whole in (2.0, -3.0, 0.0, float(2**53 - 1)):
        assert _causes(whole, integer("N.")) == []
    for other in (2.5, float(2**53), 1e300):
        assert _causes(other, integer("N."))[0][2].endswith('must be of type integer: "number"')


def test_whole_floats_become_integers_under_integer_fields_only() -> None:
    node = obj(
        "Root.",
        n=integer("N."),
        x=Field("number", "X."),
        ns=Field("array", "Ns.", items=integer("N.")),
        free=Field("object", "Free.", preserve_unknown=True),
        q=Field("quantity", "Q."),
    )
    value = {"n": 2.0, "x": 2.0, "ns": [1.0, 2.5], "free": {"n": 2.0}, "q": 8.0}
    assert whole_floats_as_integers(value, node) == value
    assert [type(value["n"]), type(value["ns"][0]), type(value["q"])] == [int, int, int]
    assert [type(value["x"]), type(value["ns"][1]), type(value["free"]["n"])] == [
        float,
        float,
        float,
    ]
