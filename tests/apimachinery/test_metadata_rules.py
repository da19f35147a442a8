"""Object metadata rules, with apimachinery's wording."""

from __future__ import annotations

import time

import pytest

from runtimes.apimachinery.metadata_rules import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    TOTAL_LABEL_SIZE_LIMIT,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    finalizer_warnings,
    label_value_errors,
    qualified_name_errors,
    size_errors,
    validate_annotations,
    validate_finalizers,
    validate_generate_name,
    validate_labels,
    validate_name,
    validate_namespace,
    validate_object_meta,
)

SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    r"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize("name", ["sft", "sft-trl", "a.b-c.d", "0", "a" * 253, "qwen3.0-6b"])
def test_it_accepts_dns_subdomain_names(name: str) -> None:
    assert validate_name(name) == []


@pytest.mark.parametrize("name", ["SFT", "sft_trl", "-sft", "sft-", "sft..trl", ".sft", "", "a b"])
def test_it_rejects_other_names_with_apimachinerys_message(name: str) -> None:
    [error] = validate_name(name)
    assert error.field == "metadata.name"
    assert error.reason == "FieldValueInvalid"
    assert error.message.endswith(SUBDOMAIN_MESSAGE)


def test_it_limits_names_to_253_characters() -> None:
    assert dns1123_subdomain_errors("a" * 254) == ["must be no more than 253 characters"]


def test_it_validates_projects_as_dns_labels() -> None:
    assert validate_namespace("research") == []
    [error] = validate_namespace("research.team")
    assert (error.field, error.message) == (
        "metadata.namespace",
        f'Invalid value: "research.team": {LABEL_MESSAGE}',
    )
    assert dns1123_label_errors("a" * 64) == ["must be no more than 63 characters"]


@pytest.mark.parametrize(
    "key",
    ["team", "nodus.dev/task", "app.kubernetes.io/name", "A_b.c-D", "x" * 63, "a/" + "b" * 63],
)
def test_it_accepts_qualified_label_keys(key: str) -> None:
    assert qualified_name_errors(key) == []


@pytest.mark.parametrize(
    ("key", "messages"),
    [
        ("/name", ["prefix part must be non-empty"]),
        ("nodus.dev/", ["name part must be non-empty", "name part must consist"]),
        ("a/b/c", ["a qualified name must consist"]),
        ("x" * 64, ["name part must be no more than 63 characters"]),
        ("Nodus.dev/x", ["prefix part a lowercase RFC 1123 subdomain"]),
        ("-team", ["name part must consist"]),
    ],
)
def test_it_explains_bad_qualified_names_part_by_part(key: str, messages: list[str]) -> None:
    errors = qualified_name_errors(key)
    assert len(errors) == len(messages)
    for error, start in zip(errors, messages, strict=True):
        assert error.startswith(start)


def test_it_checks_label_keys_and_values_at_metadata_labels() -> None:
    errors = validate_labels({"team": "-bad", "ok": "", "x/y/z": "v", "long": "v" * 64})
    assert [e.field for e in errors] == ["metadata.labels"] * 3
    assert {e.message.split(":")[1].strip() for e in errors} == {
        '"-bad"',
        '"x/y/z"',
        f'"{"v" * 64}"',
    }
    assert label_value_errors("") == []


def test_it_requires_string_label_values() -> None:
    [error] = validate_labels({"team": 3})
    assert (error.field, error.reason) == ("metadata.labels[team]", "FieldValueInvalid")
    [error] = validate_labels(["team"])
    assert error.field == "metadata.labels"


def test_it_ignores_case_in_annotation_keys() -> None:
    assert validate_annotations({"Nodus.Dev/Description": "x"}) == []
    assert validate_labels({"Nodus.Dev/Description": "x"}) != []


def test_it_limits_the_total_size_of_annotations() -> None:
    half = TOTAL_ANNOTATION_SIZE_LIMIT // 2
    assert validate_annotations({"a": "x" * (half - 1), "b": "y" * (half - 1)}) == []
    [error] = validate_annotations({"a": "x" * half, "b": "y" * half})
    assert (error.field, error.reason) == ("metadata.annotations", "FieldValueTooLong")
    assert error.message == f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"


def test_it_limits_the_total_size_of_labels() -> None:
    assert TOTAL_LABEL_SIZE_LIMIT == 64 * 1024
    # 1,024 labels of 64 bytes each (a 10-byte key, a 54-byte value) fill it exactly.
    full = {f"key-{i:06d}": "v" * 54 for i in range(1024)}
    assert validate_labels(full) == []
    [error] = validate_labels({**full, "x": ""})
    assert (error.field, error.reason) == ("metadata.labels", "FieldValueTooLong")
    assert error.message == f"Too long: may not be more than {TOTAL_LABEL_SIZE_LIMIT} bytes"


def test_it_counts_label_and_annotation_sizes_in_utf8_bytes() -> None:
    # Keys must be ASCII to be valid, values need not be for annotations: 4 bytes per emoji.
    emoji = "\N{GRINNING FACE}"
    limit = TOTAL_ANNOTATION_SIZE_LIMIT
    assert validate_annotations({"a": emoji * ((limit - 1) // 4)}) == []
    [error] = validate_annotations({"a": emoji * (limit // 4)})
    assert error.reason == "FieldValueTooLong"
    # A lone surrogate (a YAML body can carry one) is counted, not a crash.
    [error] = validate_annotations({"a": "\ud800" * limit})
    assert error.reason == "FieldValueTooLong"


def test_it_refuses_20000_labels_with_one_cause_in_linear_time() -> None:
    labels = {f"k{i}": f"v{i}" for i in range(20_000)}
    started = time.perf_counter()
    errors = validate_labels(labels)
    assert time.perf_counter() - started < 0.5
    assert [(e.field, e.reason) for e in errors] == [("metadata.labels", "FieldValueTooLong")]
    # Invalid keys in a map over its limit add no causes: the Status stays small.
    bad = {f"-bad-{i}": "-" for i in range(20_000)}
    assert len(validate_labels(bad)) == 1
    assert len(validate_annotations({f"-{i}": "x" * 16 for i in range(20_000)})) == 1


def test_it_checks_sizes_alone_for_callers_about_to_do_work_per_label() -> None:
    assert size_errors({"labels": {"a": "b"}, "annotations": {"-not valid-": "x"}}) == []
    assert size_errors(None) == []
    assert size_errors({"labels": ["a"]}) == []
    errors = size_errors(
        {
            "labels": {f"k{i}": "v" for i in range(20_000)},
            "annotations": {"a": "x" * TOTAL_ANNOTATION_SIZE_LIMIT},
        }
    )
    assert [(e.field, e.message) for e in errors] == [
        ("metadata.labels", f"Too long: may not be more than {TOTAL_LABEL_SIZE_LIMIT} bytes"),
        (
            "metadata.annotations",
            f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
        ),
    ]


def test_it_requires_qualified_finalizers_and_warns_about_unprefixed_ones() -> None:
    assert validate_finalizers(["nodus.dev/catalog", "plain"]) == []
    [error] = validate_finalizers(["nodus.dev/catalog", "not ok"])
    assert (error.field, error.reason) == ("metadata.finalizers", "FieldValueInvalid")
    assert finalizer_warnings(["nodus.dev/catalog", "plain", "orphan", "x.dev"]) == [
        'metadata.finalizers: "plain": prefer a domain-qualified finalizer name to avoid '
        "accidental conflicts with other finalizer writers",
        'metadata.finalizers: "x.dev": prefer a domain-qualified finalizer name including a '
        "path (/) to avoid accidental conflicts with other finalizer writers",
    ]
    # Only the finalizers a write adds are warned about.
    assert finalizer_warnings(["plain", "x.dev"], ["plain"]) == [
        'metadata.finalizers: "x.dev": prefer a domain-qualified finalizer name including a '
        "path (/) to avoid accidental conflicts with other finalizer writers",
    ]


def test_it_allows_a_trailing_dash_in_generate_name() -> None:
    assert validate_generate_name("sft-") == []
    assert validate_generate_name("SFT-") != []
    assert validate_generate_name("a-") == []


def test_it_masks_the_trailing_dash_as_kube_does_with_the_character_before() -> None:
    # maskTrailingDash turns "x.-" into "xa" (two characters become one "a"), so it passes
    # though "x." would not; "x-.-" becomes "x-a".
    assert validate_generate_name("x.-") == []
    assert validate_generate_name("x-.-") == []
    assert [e.field for e in validate_generate_name("g" * 254)] == ["metadata.generateName"]
    assert "must be no more than 253 characters" in validate_generate_name("g" * 254)[0].message


def test_it_checks_object_meta_as_a_whole() -> None:
    assert validate_object_meta({"name": "sft", "namespace": "research"}) == []
    assert validate_object_meta({"generateName": "sft-"}) == []
    [missing] = validate_object_meta({})
    assert (missing.field, missing.reason) == ("metadata.name", "FieldValueRequired")
    assert missing.message == "Required value: name or generateName is required"
    errors = validate_object_meta(
        {"name": "Bad", "namespace": "Bad", "labels": {"-": "x"}, "annotations": {"/": ""}}
    )
    assert [e.field for e in errors] == [
        "metadata.name",
        "metadata.namespace",
        "metadata.labels",
    ] + ["metadata.annotations"] * 3  # "/": empty prefix, empty name, name fails the regex


def test_it_checks_owner_references_as_kube_does() -> None:
    from runtimes.apimachinery.metadata_rules import validate_owner_references

    good = {"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingRuntime", "name": "a", "uid": "1"}
    assert validate_owner_references([good]) == []
    [uid] = validate_owner_references([{**good, "uid": ""}])
    assert (uid.field, uid.message) == (
        "metadata.ownerReferences.uid",
        'Invalid value: "": uid must not be empty',
    )
    [version] = validate_owner_references([{**good, "apiVersion": "nodus.dev/"}])
    assert version.message == 'Invalid value: "nodus.dev/": version must not be empty'
    event = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "2"}
    [banned] = validate_owner_references([event])
    assert banned.field == "metadata.ownerReferences"
    assert banned.message.endswith(": /v1, Kind=Event is disallowed from being an owner")
    two = validate_owner_references(
        [{**good, "controller": True}, {**event, "kind": "X", "controller": True}]
    )
    assert "Only one reference can have Controller set to true" in two[-1].message
