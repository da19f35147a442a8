"""Metadata read into ObjectMeta as kube's decoder reads it: Go's json errors, word for word."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.apimachinery.metadecode import type_error


@pytest.mark.parametrize(
    ("meta", "error"),
    [
        (5, "json: cannot unmarshal number into Go value of type v1.ObjectMeta"),
        ("x", "json: cannot unmarshal string into Go value of type v1.ObjectMeta"),
        ([], "json: cannot unmarshal array into Go value of type v1.ObjectMeta"),
        (
            {"name": 5},
            "json: cannot unmarshal number into Go struct field ObjectMeta.name of type string",
        ),
        (
            {"labels": ["a"]},
            "json: cannot unmarshal array into Go struct field ObjectMeta.labels of type "
            "map[string]string",
        ),
        (
            {"labels": {"a": True}},
            "json: cannot unmarshal bool into Go struct field ObjectMeta.labels of type string",
        ),
        (
            {"finalizers": "x"},
            "json: cannot unmarshal string into Go struct field ObjectMeta.finalizers of type "
            "[]string",
        ),
        (
            {"generation": 1.5},
            "json: cannot unmarshal number 1.5 into Go struct field ObjectMeta.generation of "
            "type int64",
        ),
        (
            {"uid": {}},
            "json: cannot unmarshal object into Go struct field ObjectMeta.uid of type types.UID",
        ),
        (
            {"ownerReferences": [5]},
            "json: cannot unmarshal number into Go struct field ObjectMeta.ownerReferences of "
            "type v1.OwnerReference",
        ),
        (
            {"ownerReferences": [{"controller": "yes"}]},
            "json: cannot unmarshal string into Go struct field "
            "OwnerReference.ownerReferences.controller of type bool",
        ),
        (
            {"managedFields": [{"operation": 1}]},
            "json: cannot unmarshal number into Go struct field "
            "ManagedFieldsEntry.managedFields.operation of type v1.ManagedFieldsOperationType",
        ),
    ],
)
def test_it_words_a_mismatch_as_go_does(meta: Any, error: str) -> None:
    assert type_error(meta) == error


def test_the_first_mismatch_in_sorted_order_wins() -> None:
    # Go reads the metadata written back with sorted keys and keeps its first error.
    meta = {"name": 5, "annotations": {"z": 1, "a": 2}, "labels": {"k": []}}
    assert type_error(meta) == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.annotations of type string"
    )


def test_a_timestamp_of_the_wrong_type_stops_the_decoder_and_wins() -> None:
    # metav1.Time fails on its own, which ends decoding: an earlier saved error is lost.
    assert type_error({"annotations": {"a": 1}, "creationTimestamp": 5}) == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.creationTimestamp of "
        "type string"
    )


def test_what_go_accepts_passes_and_nulls_become_empty_strings() -> None:
    meta: dict[str, Any] = {
        "name": "a",
        "generation": 2.0,  # written back as 2
        "labels": {"k": None},
        "finalizers": [None, "x"],
        "deletionTimestamp": None,
        "managedFields": [{"fieldsV1": {"f:spec": {}}, "time": "2026-01-01T00:00:00Z"}],
        "unknown": [1, 2],  # strict decoding's to report, not a type error
    }
    assert type_error(meta) is None
    assert meta["labels"] == {"k": ""}
    assert meta["finalizers"] == ["", "x"]
    assert type_error(None) is None


def test_nulls_stay_when_another_field_is_refused() -> None:
    meta = {"labels": {"k": None}, "name": 5}
    assert type_error(meta) is not None
    assert meta["labels"] == {"k": None}
