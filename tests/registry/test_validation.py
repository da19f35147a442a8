"""Validation rules that the corpus cannot express compactly, and the exact messages."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from runtimes.registry.trainingruntime.parameter_schema import PARAMETERS_MAX_BYTES
from runtimes.registry.trainingruntime.validation import (
    validate_runtime,
    validate_spec,
    validate_status,
)
from tests.invalid_manifests import base, merge_patch, stub_catalog

CATALOG = stub_catalog()


def _spec(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    return merge_patch(base()["spec"], patch or {})


def _causes(spec: Any) -> list[tuple[str, str]]:
    return [(e.field, e.reason) for e in validate_spec(spec, CATALOG)]


def test_it_rejects_a_spec_that_is_missing_or_not_an_object() -> None:
    assert _causes(None) == [("spec", "FieldValueRequired")]
    assert _causes(["SFT"]) == [("spec", "FieldValueTypeInvalid")]
    [error] = validate_spec("x", CATALOG)
    assert error.message == 'Invalid value: "string": spec in body must be of type object: "string"'


def test_it_reports_every_missing_required_field_at_once() -> None:
    assert _causes({}) == [
        ("spec.image", "FieldValueRequired"),
        ("spec.task", "FieldValueRequired"),
        ("spec.command", "FieldValueRequired"),
    ]


def test_it_words_unsupported_values_like_kube_apiserver() -> None:
    [error] = validate_spec(_spec({"launcher": "Slurm"}), CATALOG)
    assert str(error) == (
        'spec.launcher: Unsupported value: "Slurm": supported values: "Plain", "Torchrun", '
        '"Accelerate", "Deepspeed"'
    )


def _parameters_of_size(size: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "description": ""}
    schema["description"] = "x" * (size - len(orjson.dumps(schema)))
    assert len(orjson.dumps(schema)) == size
    return schema


def test_it_allows_parameter_schemas_up_to_64_kib_of_compact_json() -> None:
    spec = _spec({"defaults": {"parameters": None}})
    spec["parameters"] = _parameters_of_size(PARAMETERS_MAX_BYTES)
    assert _causes(spec) == []
    spec["parameters"] = _parameters_of_size(PARAMETERS_MAX_BYTES + 1)
    [error] = validate_spec(spec, CATALOG)
    assert (error.field, error.reason) == ("spec.parameters", "FieldValueTooLong")
    assert error.message == "Too long: may not be more than 65536 bytes"


def test_it_does_not_enforce_required_parameters_in_defaults() -> None:
    spec = _spec()
    assert "epochs" in spec["parameters"]["required"]
    assert "epochs" not in spec["defaults"]["parameters"]
    assert _causes(spec) == []


def test_it_follows_local_references_when_checking_defaults() -> None:
    parameters = {
        "type": "object",
        "$defs": {"rate": {"type": "number", "maximum": 1}},
        "properties": {"learningRate": {"$ref": "#/$defs/rate"}},
    }
    spec = _spec({"defaults": {"parameters": None}})
    spec["parameters"] = parameters
    spec["defaults"]["parameters"] = {"learningRate": 5}
    assert _causes(spec) == [("spec.defaults.parameters.learningRate", "FieldValueInvalid")]


def test_it_never_fetches_a_remote_reference() -> None:
    spec = _spec({"defaults": {"parameters": {"lora": {"r": 8}}}})
    spec["parameters"]["properties"]["lora"] = {"$ref": "http://127.0.0.1:9/never.json"}
    assert _causes(spec) == [("spec.parameters.properties.lora[$ref]", "FieldValueInvalid")]


def test_it_reports_deeply_nested_parameter_schemas_instead_of_crashing() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(400):
        deep = {"type": "object", "properties": {"a": deep}}
    spec = _spec({"defaults": {"parameters": None}})
    spec["parameters"] = deep
    assert _causes(spec) == [("spec.parameters", "FieldValueInvalid")]


def test_it_names_the_type_a_field_must_have() -> None:
    [error] = validate_spec(_spec({"command": "python train.py"}), CATALOG)
    assert error.message == (
        'Invalid value: "string": spec.command in body must be of type array: "string"'
    )
    assert error.fix == "spec.command must be a list of strings."
    [error] = validate_spec(_spec({"requires": {"data": "yes"}}), CATALOG)
    assert error.message == (
        'Invalid value: "string": spec.requires.data in body must be of type boolean: "string"'
    )
    assert error.fix == "spec.requires.data must be a boolean."


def test_it_says_which_launchers_can_run_multiple_nodes() -> None:
    [error] = validate_spec(
        _spec({"launcher": "Plain", "defaults": {"resources": {"nodes": 2}}}), CATALOG
    )
    assert "Torchrun, Accelerate or Deepspeed" in error.message
    for launcher in ("Torchrun", "Accelerate", "Deepspeed"):
        assert _causes(_spec({"launcher": launcher, "defaults": {"resources": {"nodes": 2}}})) == []


def test_it_reports_an_unknown_launcher_once_even_with_several_nodes() -> None:
    spec = _spec({"launcher": "Slurm", "defaults": {"resources": {"nodes": 4}}})
    assert _causes(spec) == [("spec.launcher", "FieldValueNotSupported")]


def test_it_suggests_a_variant_when_exact_names_a_family() -> None:
    spec = _spec({"defaults": {"resources": {"gpu": {"type": ["A100"], "exact": True}}}})
    [error] = validate_spec(spec, CATALOG)
    assert "'a100-40g-sxm'" in error.message
    assert "exact: false" in error.message


def test_it_allows_variant_ids_with_exact() -> None:
    spec = _spec(
        {
            "defaults": {
                "resources": {"gpu": {"type": ["h100-80g-sxm", "h100-94g-nvl"], "exact": True}}
            }
        }
    )
    assert _causes(spec) == []


def test_it_caps_the_init_command_at_thirty_minutes() -> None:
    assert _causes(_spec({"defaults": {"initCommand": {"timeout": "30m"}}})) == []
    assert _causes(_spec({"defaults": {"initCommand": {"timeout": "1799.999s"}}})) == []
    [error] = validate_spec(_spec({"defaults": {"initCommand": {"timeout": "30m1s"}}}), CATALOG)
    assert error.message == 'Invalid value: "30m1s": must be at most 30m'


def test_it_accepts_numbers_as_quantities() -> None:
    assert _causes(_spec({"defaults": {"resources": {"cpu": 8, "memory": 0.5}}})) == []


def test_it_accepts_an_empty_quantization_for_full_and_lora() -> None:
    presets = [
        {
            "model": "Qwen/Qwen3-0.6B",
            "method": "Full",
            "quantization": "",
            "resources": {"cpu": "8"},
        },
        {"model": "Qwen/Qwen3-0.6B", "method": "LoRA", "resources": {"cpu": "8"}},
    ]
    assert _causes(_spec({"presets": presets})) == []


def test_it_treats_an_absent_and_an_empty_quantization_as_the_same_preset() -> None:
    presets = [
        {
            "model": "Qwen/Qwen3-0.6B",
            "method": "Full",
            "quantization": "",
            "resources": {"cpu": "8"},
        },
        {"model": "Qwen/Qwen3-0.6B", "method": "Full", "resources": {"cpu": "8"}},
    ]
    assert _causes(_spec({"presets": presets})) == [("spec.presets[1]", "FieldValueDuplicate")]


def test_it_checks_metadata_and_spec_together() -> None:
    runtime = base()
    runtime["metadata"]["name"] = "Bad"
    runtime["spec"]["task"] = "Nope"
    assert [e.field for e in validate_runtime(runtime, CATALOG)] == ["metadata.name", "spec.task"]
    assert validate_runtime("x", CATALOG)[0].reason == "FieldValueInvalid"


VALID_STATUS = {
    "phase": "Ready",
    "imageDigest": "sha256:" + "ab" * 32,
    "imageUser": "root",
    "managed": True,
    "observedGeneration": 3,
    "conditions": [
        {
            "type": "Verified",
            "status": "True",
            "reason": "SignatureVerified",
            "message": "signed by the nodus release key",
            "lastTransitionTime": "2026-12-02T10:51:39Z",
            "observedGeneration": 3,
        }
    ],
}


def test_it_accepts_a_controller_status() -> None:
    assert validate_status(VALID_STATUS) == []
    assert validate_status(None) == []
    assert validate_status({}) == []


@pytest.mark.parametrize(
    ("patch", "field", "reason"),
    [
        ({"phase": "Running"}, "status.phase", "FieldValueNotSupported"),
        ({"observedGeneration": -1}, "status.observedGeneration", "FieldValueInvalid"),
        ({"observedGeneration": "3"}, "status.observedGeneration", "FieldValueTypeInvalid"),
        ({"managed": "true"}, "status.managed", "FieldValueTypeInvalid"),
        ({"imageDigest": "sha256:abc"}, "status.imageDigest", "FieldValueInvalid"),
        ({"conditions": {"type": "Verified"}}, "status.conditions", "FieldValueTypeInvalid"),
    ],
)
def test_it_rejects_bad_status_fields(patch: dict[str, Any], field: str, reason: str) -> None:
    errors = validate_status({**VALID_STATUS, **patch})
    assert [(e.field, e.reason) for e in errors] == [(field, reason)]


@pytest.mark.parametrize(
    ("patch", "field", "reason"),
    [
        ({"status": "Maybe"}, "status.conditions[0].status", "FieldValueNotSupported"),
        ({"type": None}, "status.conditions[0].type", "FieldValueRequired"),
        ({"type": "not a type"}, "status.conditions[0].type", "FieldValueInvalid"),
        ({"reason": ""}, "status.conditions[0].reason", "FieldValueRequired"),
        ({"reason": "Not verified"}, "status.conditions[0].reason", "FieldValueInvalid"),
        ({"reason": "R" * 1025}, "status.conditions[0].reason", "FieldValueTooLong"),
        ({"message": "m" * 32769}, "status.conditions[0].message", "FieldValueTooLong"),
        (
            {"lastTransitionTime": None},
            "status.conditions[0].lastTransitionTime",
            "FieldValueRequired",
        ),
        (
            {"lastTransitionTime": "yesterday"},
            "status.conditions[0].lastTransitionTime",
            "FieldValueInvalid",
        ),
        (
            {"observedGeneration": -2},
            "status.conditions[0].observedGeneration",
            "FieldValueInvalid",
        ),
    ],
)
def test_it_checks_conditions_as_metav1_does(
    patch: dict[str, Any], field: str, reason: str
) -> None:
    condition = {
        k: v for k, v in {**VALID_STATUS["conditions"][0], **patch}.items() if v is not None
    }
    errors = validate_status({**VALID_STATUS, "conditions": [condition]})
    assert [(e.field, e.reason) for e in errors] == [(field, reason)]


def test_it_lists_the_condition_statuses_kube_allows() -> None:
    condition = {**VALID_STATUS["conditions"][0], "status": "Maybe"}
    [error] = validate_status({"conditions": [condition]})
    assert (
        error.message == 'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'
    )


def test_it_keeps_condition_types_unique() -> None:
    condition = VALID_STATUS["conditions"][0]
    errors = validate_status({"conditions": [condition, dict(condition)]})
    assert [(e.field, e.reason) for e in errors] == [
        ("status.conditions[1].type", "FieldValueDuplicate")
    ]
