"""The OpenAPI v3 document: what kubectl explain, apply and edit rely on."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from runtimes.registry.openapi import (
    PATCH_MEDIA_TYPES,
    openapi_v3_bytes,
    openapi_v3_discovery,
    openapi_v3_document,
    openapi_v3_hash,
)
from runtimes.registry.trainingruntime.schema import field_help

GVK = {"group": "nodus.dev", "version": "v1beta1", "kind": "TrainingRuntime"}
NS = "/apis/nodus.dev/v1beta1/namespaces/{namespace}/trainingruntimes"
JOBS = "/apis/nodus.dev/v1beta1/namespaces/{namespace}/trainingjobs"
VERBS = ("get", "put", "post", "patch", "delete")
DOC = openapi_v3_document()
SCHEMAS = DOC["components"]["schemas"]
TOP = SCHEMAS["dev.nodus.v1beta1.TrainingRuntime"]


def _operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in DOC["paths"].items():
        for verb in VERBS:
            if verb in item:
                yield path, verb, item[verb]


def _params(path: str, op: dict[str, Any]) -> set[str]:
    shared = DOC["paths"][path].get("parameters", [])
    return {p["name"] for p in [*shared, *op.get("parameters", [])]}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "allOf" in schema or "$ref" in schema:
        target = schema["allOf"][0] if "allOf" in schema else schema
        if "$ref" not in target:
            return target
        schema = SCHEMAS[target["$ref"].removeprefix("#/components/schemas/")]
    return schema


def _property(path: str) -> dict[str, Any]:
    schema = TOP
    for name in path.split("."):
        schema = _resolve(schema)
        if schema.get("type") == "array":
            schema = _resolve(schema["items"])
        schema = schema["properties"][name]
    return schema


def test_it_has_the_paths_kubectl_uses() -> None:
    assert set(DOC["paths"]) == {
        "/apis/nodus.dev/v1beta1/trainingruntimes",
        NS,
        NS + "/{name}",
        NS + "/{name}/status",
        NS + "/{name}/compile",
        "/apis/nodus.dev/v1beta1/trainingjobs",
        JOBS,
        JOBS + "/{name}",
        JOBS + "/{name}/status",
        # Read-only Accelerators: get, list and watch (kubectl explain finds a kind by them).
        "/apis/nodus.dev/v1beta1/accelerators",
        "/apis/nodus.dev/v1beta1/accelerators/{name}",
    }
    assert set(DOC["paths"]["/apis/nodus.dev/v1beta1/accelerators/{name}"]) == {
        "get",
        "parameters",
    }
    assert set(DOC["paths"][NS + "/{name}"]) >= {"get", "put", "patch", "delete"}
    assert set(DOC["paths"][NS]) >= {"get", "post", "delete"}


def test_it_puts_a_gvk_object_and_an_action_on_every_operation() -> None:
    actions = set()
    for path, verb, op in _operations():
        kind = (
            "Accelerator"
            if "/accelerators" in path
            else "TrainingJob"
            if "/trainingjobs" in path
            else "TrainingRuntime"
        )
        assert op["x-kubernetes-group-version-kind"] == {**GVK, "kind": kind}, (path, verb)
        actions.add(op["x-kubernetes-action"])
    assert actions == {"list", "post", "get", "put", "patch", "delete", "deletecollection"}


def test_it_declares_patch_params_and_exactly_three_patch_media_types() -> None:
    patches = [(path, op) for path, verb, op in _operations() if verb == "patch"]
    assert len(patches) == 4  # the object and its status, of each kind
    for path, op in patches:
        assert _params(path, op) >= {"dryRun", "fieldManager", "fieldValidation", "force"}
        assert list(op["requestBody"]["content"]) == list(PATCH_MEDIA_TYPES)
        assert set(op["requestBody"]["content"]) == {
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        }


def test_it_declares_write_params_on_create_and_replace() -> None:
    for path, verb, op in _operations():
        if verb in ("put", "post") and not path.endswith("/compile"):
            assert _params(path, op) >= {"dryRun", "fieldManager", "fieldValidation"}, path


def test_it_declares_list_and_watch_params_on_list_operations() -> None:
    wanted = {
        "labelSelector",
        "fieldSelector",
        "watch",
        "allowWatchBookmarks",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "limit",
        "continue",
        "sendInitialEvents",
    }
    lists = [(p, op) for p, verb, op in _operations() if op["x-kubernetes-action"] == "list"]
    assert len(lists) == 5  # in every project and in one of each namespaced kind, and Accelerators
    for path, op in lists:
        assert _params(path, op) >= wanted
        assert "application/json;stream=watch" in op["responses"]["200"]["content"]


def test_it_publishes_the_kind_with_a_gvk_list_and_selectable_fields() -> None:
    assert TOP["x-kubernetes-group-version-kind"] == [GVK]
    assert TOP["x-kubernetes-selectable-fields"] == [
        {"fieldPath": "spec.task"},
        {"fieldPath": "spec.launcher"},
        {"fieldPath": "status.phase"},
        {"fieldPath": "status.managed"},
    ]
    assert TOP["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]


def test_it_keeps_parameter_schemas_free_form() -> None:
    for path in ("spec.parameters", "spec.defaults.parameters"):
        assert _property(path)["x-kubernetes-preserve-unknown-fields"] is True


def test_it_publishes_enums_defaults_and_quantities() -> None:
    launcher = _property("spec.launcher")
    assert launcher["enum"] == ["Plain", "Torchrun", "Accelerate", "Deepspeed"]
    assert launcher["default"] == "Plain"
    assert _property("spec.presets.resources.gpu.count")["enum"] == [1, 2, 4, 8]
    memory = _property("spec.defaults.resources.memory")
    assert memory["x-kubernetes-int-or-string"] is True
    assert re.fullmatch(memory["pattern"], "64Gi")
    assert _property("spec.defaults.sidecars")["x-kubernetes-list-map-keys"] == ["name"]


@pytest.mark.parametrize(
    "path", ["spec.launcher", "spec.presets.model", "spec.checkpointing.path", "status.phase"]
)
def test_it_explains_fields_with_the_schema_descriptions(path: str) -> None:
    assert _property(path)["description"] == field_help(path)


def test_it_only_refers_to_schemas_it_contains() -> None:
    refs = re.findall(r'"\$ref":"([^"]+)"', openapi_v3_bytes().decode())
    assert refs
    for target in refs:
        assert target.startswith("#/components/schemas/")
        assert target.removeprefix("#/components/schemas/") in SCHEMAS


def test_it_hashes_the_served_bytes_in_uppercase_sha512() -> None:
    digest = openapi_v3_hash()
    assert re.fullmatch(r"[0-9A-F]{128}", digest)
    assert digest == hashlib.sha512(openapi_v3_bytes()).hexdigest().upper()
    assert orjson.loads(openapi_v3_bytes()) == openapi_v3_document()


def test_it_lists_the_group_version_without_a_leading_slash() -> None:
    paths = openapi_v3_discovery()["paths"]
    assert list(paths) == ["apis/nodus.dev/v1beta1"]
    url = paths["apis/nodus.dev/v1beta1"]["serverRelativeURL"]
    assert url == f"/openapi/v3/apis/nodus.dev/v1beta1?hash={openapi_v3_hash()}"


def test_it_hands_out_copies_callers_may_change() -> None:
    first = openapi_v3_document()
    first["paths"].clear()
    assert openapi_v3_document()["paths"]


def test_it_is_a_valid_openapi_3_0_document() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    definitions = pytest.importorskip("schemathesis.specs.openapi.definitions")
    validator = jsonschema.Draft4Validator(definitions.OPENAPI_30)
    assert [e.message for e in validator.iter_errors(openapi_v3_document())] == []
