"""TrainingJobs over HTTP: admission is compilation, and every refusal points into the job."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.invalid_manifests import base, merge_patch
from tests.support.api import GV, ApiClient

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"
TJS = f"{GV}/namespaces/demo/trainingjobs"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
JOB: dict[str, Any] = {
    "apiVersion": "nodus.dev/v1beta1",
    "kind": "TrainingJob",
    "metadata": {"name": "tune"},
    "spec": {
        "runtimeRef": {"name": "sft-trl"},
        "model": "Qwen/Qwen3-0.6B",
        "method": "LoRA",
        "data": "hf://datasets/nodus/alpaca",
        "parameters": {"epochs": 2},
        "steps": 1000,
    },
}


def job(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    return merge_patch(copy.deepcopy(JOB), {"spec": patch or {}})


def add_runtime(api: Callable[[str | None], ApiClient], patch: Any = None) -> dict[str, Any]:
    manifest = merge_patch(base(), patch or {})
    manifest["metadata"]["namespace"] = "demo"
    response = api("alice").post(TRS, manifest)
    assert response.status_code == 201, response.json_body
    body: dict[str, Any] = response.json_body
    return body


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    add_runtime(api)
    return api("alice")


def refused(response: Any) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.json_body
    body = response.json_body
    assert body["reason"] == "Invalid"
    assert body["details"]["kind"] == "TrainingJob"
    return [(c["field"], c["reason"]) for c in body["details"]["causes"]]


def test_it_creates_a_job_that_compiles(alice: ApiClient) -> None:
    response = alice.post(TJS, job())
    assert response.status_code == 201, response.json_body
    stored = response.json_body
    assert stored["spec"]["runtimeRef"] == {"name": "sft-trl", "namespace": "demo"}
    assert stored["status"]["phase"] == "Pending"
    assert alice.get(f"{TJS}/tune").json_body["spec"]["model"] == "Qwen/Qwen3-0.6B"


RULES = [
    pytest.param({"data": None}, [("spec.data", "FieldValueRequired")], id="required-input"),
    pytest.param({"model": None}, [("spec.model", "FieldValueRequired")], id="required-model"),
    pytest.param(
        {"model": "Qwen/Qwen3-72B"}, [("spec.model", "FieldValueNotSupported")], id="model"
    ),
    pytest.param({"method": None}, [("spec.method", "FieldValueRequired")], id="method-missing"),
    pytest.param(
        {"method": "QLoRA", "quantization": "int8"},
        [("spec.quantization", "FieldValueNotSupported")],
        id="quantization",
    ),
    pytest.param(
        {"parameters": {"learningRate": -1}},
        [("spec.parameters.learningRate", "FieldValueInvalid")],
        id="parameter-value",
    ),
    pytest.param(
        {"parameters": {"epochs": None}},
        [("spec.parameters.epochs", "FieldValueRequired")],
        id="parameter-required",
    ),
    pytest.param(
        {"parameters": {"warmup": 10}},
        [("spec.parameters.warmup", "FieldValueForbidden")],
        id="parameter-unknown",
    ),
    pytest.param(
        {"parameters": {"lora": {"r": 12}}},
        [("spec.parameters.lora.r", "FieldValueNotSupported")],
        id="parameter-after-merge",
    ),
    pytest.param({"mode": "Evaluate"}, [("spec.steps", "FieldValueForbidden")], id="mode-and-work"),
    pytest.param(
        {"accelerator": "v100-16g"},
        [("spec.accelerator", "FieldValueNotSupported")],
        id="accelerator-unknown",
    ),
    pytest.param(
        {"accelerator": "H100"}, [("spec.accelerator", "FieldValueInvalid")], id="accelerator"
    ),
    pytest.param(
        {"initCommand": {"command": ["preflight"], "timeout": "45m"}},
        [("spec.initCommand.timeout", "FieldValueInvalid")],
        id="init-timeout",
    ),
    pytest.param(
        {"sidecars": [{"name": "rollout"}, {"name": "rollout"}]},
        [("spec.sidecars[1].name", "FieldValueDuplicate")],
        id="sidecar-names",
    ),
    pytest.param(
        {"sidecars": [{"name": "rollout", "env": [{"name": "1PORT", "value": "8000"}]}]},
        [("spec.sidecars[0].env[0].name", "FieldValueInvalid")],
        id="env-name",
    ),
    pytest.param(
        {"environment": "nodus/webshop"},
        [("spec.environment", "FieldValueForbidden")],
        id="environment",
    ),
    pytest.param(
        {"resources": {"cpu": "2"}}, [("spec.resources.cpu", "FieldValueInvalid")], id="floor"
    ),
    pytest.param(
        {"resources": {"gpu": {"count": 3}}},
        [("spec.resources.gpu.count", "FieldValueNotSupported")],
        id="gpu-count",
    ),
    pytest.param(
        {"distributed": {"nodes": 0}},
        [("spec.distributed.nodes", "FieldValueInvalid")],
        id="nodes",
    ),
    pytest.param(
        {"runtimeRef": {"name": "nope"}},
        [("spec.runtimeRef.name", "FieldValueNotFound")],
        id="runtime-missing",
    ),
    pytest.param(
        {"runtimeRef": {"namespace": "research"}},
        [("spec.runtimeRef.namespace", "FieldValueInvalid")],
        id="runtime-elsewhere",
    ),
    pytest.param({"steps": 0}, [("spec.steps", "FieldValueInvalid")], id="steps"),
]


@pytest.mark.parametrize(("patch", "causes"), RULES)
def test_it_refuses_a_job_that_would_not_compile(
    alice: ApiClient, patch: dict[str, Any], causes: list[tuple[str, str]]
) -> None:
    assert refused(alice.post(TJS, job(patch))) == causes
    assert alice.get(f"{TJS}/tune").status_code == 404  # a failed write changes nothing


def test_it_says_why_an_environment_needs_attempt_api(alice: ApiClient) -> None:
    body = alice.post(TJS, job({"environment": "nodus/webshop"})).json_body
    message = body["details"]["causes"][0]["message"]
    assert "environmentTasks" in message
    assert "AttemptAPI" in message
    assert "Remove spec.environment" in body["fix"]  # what to do, beside what is wrong


def test_it_takes_an_environment_when_the_runtime_attempts_the_api(
    api: Callable[[str | None], ApiClient],
) -> None:
    add_runtime(api, {"spec": {"environmentTasks": "AttemptAPI"}})
    response = api("alice").post(TJS, job({"environment": "nodus/webshop"}))
    assert response.status_code == 201, response.json_body


def test_it_refuses_an_update_that_would_not_compile(alice: ApiClient) -> None:
    assert alice.post(TJS, job()).status_code == 201
    response = alice.patch(f"{TJS}/tune", {"spec": {"parameters": {"learningRate": -1}}})
    assert refused(response) == [("spec.parameters.learningRate", "FieldValueInvalid")]
    assert "learningRate" not in alice.get(f"{TJS}/tune").json_body["spec"]["parameters"]


def test_it_lets_a_label_change_through_after_the_runtime_moved_on(alice: ApiClient) -> None:
    assert alice.post(TJS, job()).status_code == 201
    # The runtime drops the LoRA preset the job runs on: the job no longer compiles...
    runtime = alice.get(f"{TRS}/sft-trl").json_body
    runtime["spec"]["presets"] = [p for p in runtime["spec"]["presets"] if p["method"] != "LoRA"]
    assert alice.put(f"{TRS}/sft-trl", runtime).status_code == 200
    # ...but a write that leaves its spec alone is not an admission of a new spec.
    response = alice.patch(f"{TJS}/tune", {"metadata": {"labels": {"team": "a"}}})
    assert response.status_code == 200, response.json_body


def test_it_stores_nodes_above_one_as_distributed_nodes(alice: ApiClient) -> None:
    response = alice.post(TJS, job({"resources": {"nodes": 2}}))
    assert response.status_code == 201, response.json_body
    spec = response.json_body["spec"]
    assert spec["distributed"] == {"nodes": 2}
    assert "resources" not in spec


def test_it_takes_a_whole_float_for_an_integer_and_stores_the_integer(alice: ApiClient) -> None:
    # kube-openapi's type check takes a whole float64 for an integer; Go writes it back as one.
    response = alice.post(TJS, job({"steps": 1000.0, "resources": {"nodes": 2.0}}))
    assert response.status_code == 201, response.json_body
    for answer in (response, alice.get(f"{TJS}/tune")):
        spec = answer.json_body["spec"]
        assert (spec["steps"], spec["distributed"]) == (1000, {"nodes": 2})
        assert type(spec["steps"]) is int
        assert type(spec["distributed"]["nodes"]) is int
    # A fraction is still a number, refused as kube refuses it.
    response = alice.post(TJS, job({"steps": 1000.5}) | {"metadata": {"name": "b"}})
    assert refused(response) == [("spec.steps", "FieldValueTypeInvalid")]


def test_it_stores_a_presets_nodes_as_distributed_nodes(
    api: Callable[[str | None], ApiClient],
) -> None:
    runtime = base()
    presets = runtime["spec"]["presets"]
    presets[1]["resources"]["nodes"] = 2  # the LoRA preset
    add_runtime(api, {"spec": {"presets": presets}})
    response = api("alice").post(TJS, job())
    assert response.status_code == 201, response.json_body
    assert response.json_body["spec"]["distributed"] == {"nodes": 2}
    # Fewer nodes than the preset measured is a floor lowered.
    response = api("alice").post(
        TJS, job({"distributed": {"nodes": 1}}) | {"metadata": {"name": "b"}}
    )
    assert refused(response) == [("spec.distributed.nodes", "FieldValueInvalid")]


def test_it_refuses_many_nodes_without_a_gang_launcher(
    api: Callable[[str | None], ApiClient],
) -> None:
    add_runtime(api, {"spec": {"launcher": "Plain"}})
    response = api("alice").post(TJS, job({"distributed": {"nodes": 2}}))
    assert refused(response) == [("spec.distributed.nodes", "FieldValueInvalid")]


def test_the_compile_draft_defaults_a_sidecars_image_to_the_jobs(alice: ApiClient) -> None:
    draft = {**JOB["spec"], "sidecars": [{"name": "rollout", "command": ["vllm", "serve"]}]}
    response = alice.post(f"{TRS}/sft-trl/compile", draft)
    assert response.status_code == 200, response.json_body
    sidecars = {s["name"]: s for s in response.json_body["sidecars"]}
    assert sidecars["rollout"]["image"] == base()["spec"]["image"]
    assert sidecars["metrics"]["image"] != base()["spec"]["image"]  # the runtime's own


def test_it_shows_the_columns_kubectl_prints(alice: ApiClient) -> None:
    assert alice.post(TJS, job()).status_code == 201
    table = alice.get(TJS, Accept=TABLE).json_body
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == [
        "Name", "Runtime", "Model", "Method", "Accelerator", "Duration", "Cost", "Phase", "Age"
    ]  # fmt: skip
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["tune", "sft-trl", "Qwen/Qwen3-0.6B", "LoRA"]
    assert cells[7] == "Pending"


def test_it_selects_jobs_by_their_fields(alice: ApiClient) -> None:
    assert alice.post(TJS, job()).status_code == 201
    other = job({"method": "Full"}) | {"metadata": {"name": "full"}}
    assert alice.post(TJS, other).status_code == 201
    names = lambda q: [i["metadata"]["name"] for i in alice.get(f"{TJS}?{q}").json_body["items"]]  # noqa: E731
    assert names("fieldSelector=spec.method=Full") == ["full"]
    assert names("fieldSelector=spec.runtimeRef.name=sft-trl,status.phase=Pending") == [
        "full",
        "tune",
    ]


def test_a_viewer_may_read_but_not_create(
    alice: ApiClient, api: Callable[[str | None], ApiClient]
) -> None:
    assert alice.post(TJS, job()).status_code == 201
    assert api("bob").get(TJS).status_code == 200
    assert api("bob").post(TJS, job() | {"metadata": {"name": "b"}}).status_code == 403


def test_only_the_controller_writes_status(alice: ApiClient) -> None:
    assert alice.post(TJS, job()).status_code == 201
    response = alice.patch(f"{TJS}/tune/status", {"status": {"phase": "Compiled"}})
    assert response.status_code == 403


def test_it_applies_a_job_server_side(alice: ApiClient) -> None:
    response = alice.patch(
        f"{TJS}/tune?fieldManager=kubectl",
        job(),
        content_type="application/apply-patch+yaml",
    )
    assert response.status_code == 201, response.json_body
    changed = job({"parameters": {"epochs": 3}})
    response = alice.patch(
        f"{TJS}/tune?fieldManager=kubectl", changed, content_type="application/apply-patch+yaml"
    )
    assert response.status_code == 200, response.json_body
    assert response.json_body["spec"]["parameters"] == {"epochs": 3}
    assert response.json_body["metadata"]["generation"] == 2


def test_the_contracts_class_names_validate_and_the_old_one_still_counts(
    api: Callable[[str | None], ApiClient],
) -> None:
    # The contract's example names the class rtx-4090; a runtime keyed by the earlier
    # rtx-4090-24g is still admitted, and its step time still estimates jobs on RTX 4090s.
    estimate = {"secondsPerStep": {"rtx-4090-24g": 2.0, "l4-24g": None, "rtx-4090": None}}
    add_runtime(api, {"spec": {"estimate": estimate}})
    draft = {**JOB["spec"], "accelerator": "RTX 4090"}
    plan = api("alice").post(f"{TRS}/sft-trl/compile", draft).json_body
    [offering] = plan["offerings"]
    assert offering["acceleratorClass"] == "rtx-4090"
    assert offering["seconds"] == 1000 * 2.0


def test_defaults_merge_under_the_job_null_removes_and_a_chosen_branch_replaces(
    api: Callable[[str | None], ApiClient],
) -> None:
    optimizer = {
        "oneOf": [
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {"name": {"const": name}, setting: {"type": "number"}},
            }
            for name, setting in (("adamw", "epsilon"), ("sgd", "momentum"))
        ]
    }
    schema = {"properties": {"optimizer": optimizer}}
    defaults = {"parameters": {"optimizer": {"name": "adamw", "epsilon": 1e-8}}}
    add_runtime(api, {"spec": {"parameters": schema, "defaults": defaults}})
    chosen = {
        "optimizer": {"name": "sgd", "momentum": 0.9},
        "lora": {"alpha": None},
        "learningRate": None,
    }
    body = job()
    body["spec"]["parameters"] = {**body["spec"]["parameters"], **chosen}  # nulls kept
    # Deep-merging the default adamw object into sgd would add epsilon, which sgd forbids.
    response = api("alice").post(TJS, body)
    assert response.status_code == 201, response.json_body
    assert response.json_body["spec"]["parameters"]["lora"] == {"alpha": None}
    plan = api("alice").post(f"{TRS}/sft-trl/compile", response.json_body["spec"]).json_body
    merged = plan["parameters"]
    assert merged["optimizer"] == {"name": "sgd", "momentum": 0.9}
    assert merged["lora"] == {"r": 16, "targetModules": ["q_proj", "v_proj"]}
    assert "learningRate" not in merged
    assert merged["batchSize"] == 8
    assert merged["epochs"] == 2


def test_a_runtime_whose_schema_allows_nothing_refuses_a_job_with_422(
    api: Callable[[str | None], ApiClient],
) -> None:
    """`oneOf: [false, false]` is a valid schema no value meets: a job that sets it is refused
    naming the field, never answered 500."""
    add_runtime(api, {"spec": {"parameters": {"properties": {"x": {"oneOf": [False, False]}}}}})
    response = api("alice").post(TJS, job({"parameters": {"epochs": 2, "x": 1}}))
    assert ("spec.parameters.x", "FieldValueInvalid") in refused(response)
