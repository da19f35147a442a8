"""The compile subresource: POST a job draft to a runtime, get the plan or 422 pointing into it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runtimes.storage import store
from runtimes.storage.models import Event
from tests.invalid_manifests import base
from tests.support.api import GV, ApiClient

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"
COMPILE = f"{TRS}/sft-trl/compile"
DRAFT = {
    "model": "Qwen/Qwen3-0.6B",
    "method": "LoRA",
    "data": "hf://datasets/nodus/alpaca",
    "parameters": {"epochs": 2, "batchSize": 16},
    "steps": 1000,
}


@pytest.fixture
def runtime(api: Callable[[str | None], ApiClient]) -> dict[str, Any]:
    manifest = base()
    manifest["metadata"]["namespace"] = "demo"
    response = api("alice").post(TRS, manifest)
    assert response.status_code == 201, response.json_body
    body: dict[str, Any] = response.json_body
    return body


def test_it_compiles_a_draft_into_a_plan(
    api: Callable[[str | None], ApiClient], runtime: dict[str, Any]
) -> None:
    before = (store.current_revision(), Event.objects.count())
    response = api("alice").post(COMPILE, DRAFT)
    assert response.status_code == 200, response.json_body
    plan = response.json_body
    assert plan["apiVersion"] == "nodus.dev/v1beta1"
    assert plan["kind"] == "CompileResult"
    assert plan["runtime"] == {"name": "sft-trl", "namespace": "demo"}
    assert plan["preset"]["method"] == "LoRA"
    # The runtime's default parameters sit under the draft's, and each says where it came from.
    assert plan["parameters"]["batchSize"] == 16
    assert (
        plan["parameters"]["learningRate"]
        == runtime["spec"]["defaults"]["parameters"]["learningRate"]
    )
    assert plan["provenance"]["/batchSize"] == "job"
    assert plan["provenance"]["/learningRate"] == "default"
    assert plan["work"] == {"steps": 1000}
    accelerators = {o["accelerator"] for o in plan["offerings"]}
    assert accelerators <= {"l4-24g-pcie", "rtx-4090-24g"}
    assert accelerators
    seconds = [o["seconds"] for o in plan["offerings"] if o["seconds"] is not None]
    assert seconds == sorted(seconds)
    # Compiling stores nothing.
    assert (store.current_revision(), Event.objects.count()) == before


def test_it_answers_invalid_with_causes_pointing_into_the_draft(
    api: Callable[[str | None], ApiClient], runtime: dict[str, Any]
) -> None:
    draft = {**DRAFT, "parameters": {"epochs": 0, "warmup": 3}, "data": None, "steps": -1}
    response = api("alice").post(COMPILE, draft)
    assert response.status_code == 422
    status = response.json_body
    assert status["reason"] == "Invalid"
    assert status["details"]["kind"] == "TrainingJob"
    fields = {(c["field"], c["reason"]) for c in status["details"]["causes"]}
    assert ("data", "FieldValueRequired") in fields
    assert ("parameters.epochs", "FieldValueInvalid") in fields
    assert ("parameters.warmup", "FieldValueForbidden") in fields
    assert ("steps", "FieldValueInvalid") in fields
    assert status["requestId"] == response["X-Request-Id"]


def test_it_names_the_presets_a_model_could_use(
    api: Callable[[str | None], ApiClient], runtime: dict[str, Any]
) -> None:
    response = api("alice").post(COMPILE, {**DRAFT, "model": "Qwen/Qwen3-8B"})
    assert response.status_code == 422
    [cause] = response.json_body["details"]["causes"]
    assert cause["field"] == "model"
    assert cause["reason"] == "FieldValueNotSupported"
    assert '"Qwen/Qwen3-0.6B"' in cause["message"]


@pytest.mark.parametrize(("who", "code"), [("bob", 200), ("root", 200), ("charlie", 403)])
def test_it_needs_only_read_access_to_the_runtime(
    api: Callable[[str | None], ApiClient], runtime: dict[str, Any], who: str, code: int
) -> None:
    response = api(who).post(COMPILE, DRAFT)
    assert response.status_code == code
    if code == 403:
        assert response.json_body["message"] == (
            'trainingruntimes.nodus.dev "sft-trl" is forbidden: User "charlie" cannot get '
            'resource "trainingruntimes" in API group "nodus.dev" in the namespace "demo"'
        )


def test_it_asks_anonymous_callers_for_credentials(
    api: Callable[[str | None], ApiClient], runtime: dict[str, Any]
) -> None:
    assert api(None).post(COMPILE, DRAFT).status_code == 401


def test_it_answers_not_found_for_a_missing_runtime_or_project(
    api: Callable[[str | None], ApiClient], actors: dict[str, Any]
) -> None:
    missing = api("alice").post(f"{TRS}/nope/compile", DRAFT)
    assert missing.status_code == 404
    assert missing.json_body["message"] == 'trainingruntimes.nodus.dev "nope" not found'
    project = api("alice").post(f"{GV}/namespaces/ghost/trainingruntimes/x/compile", DRAFT)
    assert project.json_body["message"] == 'namespaces "ghost" not found'


def test_it_refuses_what_is_not_a_draft(
    api: Callable[[str | None], ApiClient], runtime: dict[str, Any]
) -> None:
    assert api("alice").post(COMPILE, [DRAFT]).status_code == 400
    assert api("alice").get(COMPILE).status_code == 405
