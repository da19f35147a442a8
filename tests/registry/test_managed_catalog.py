"""The managed catalog seed (and the demo example): coverage, schemas, and the validation rules."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import CompileResult, compile_job
from runtimes.catalog.matching import match_gpu
from runtimes.registry.trainingruntime import validation

DATA = Path(__file__).resolve().parents[2] / "runtimes" / "data"
# The enumerations of the resource contract.
TASKS = {"SFT", "Pretrain", "DPO", "ORPO", "KTO", "Reward", "GRPO", "Distill", "Evaluate", "Custom"}
LAUNCHERS = {"Plain", "Torchrun", "Accelerate", "Deepspeed"}
GANG_LAUNCHERS = LAUNCHERS - {"Plain"}
IMAGE = re.compile(r"^registry\.nodus\.dev/trainers/([a-z0-9-]+):([\w.-]+)@sha256:([0-9a-f]{64})$")


def load(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DATA / name).read_text()) if doc]


MANAGED = load("managed-catalog.yaml")
EXAMPLES = load("examples.yaml")


def by_name(obj: dict[str, Any]) -> str:
    return obj["metadata"]["name"]


def presets(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"].get("presets") or []


def is_training(obj: dict[str, Any]) -> bool:
    return obj["spec"].get("modes", ["Train"]) != ["Evaluate"]


def test_it_seeds_at_least_twelve_runtimes_in_project_nodus() -> None:
    assert len(MANAGED) >= 12
    names = [by_name(o) for o in MANAGED]
    assert len(names) == len(set(names))
    for obj in MANAGED:
        assert (obj["apiVersion"], obj["kind"]) == ("nodus.dev/v1beta1", "TrainingRuntime")
        assert obj["metadata"]["namespace"] == "nodus"
        assert "status" not in obj
        assert obj["metadata"]["labels"]["nodus.dev/task"] == obj["spec"]["task"].lower()


def test_it_covers_every_task_and_launcher() -> None:
    assert {o["spec"]["task"] for o in MANAGED} == TASKS
    assert {o["spec"].get("launcher", "Plain") for o in MANAGED} == LAUNCHERS


def test_it_has_multi_node_presets_on_gang_launchers() -> None:
    multi_node = {
        by_name(o): o["spec"]["launcher"]
        for o in MANAGED
        for p in presets(o)
        if p["resources"].get("nodes", 1) > 1
    }
    assert len(multi_node) >= 3
    assert set(multi_node.values()) <= GANG_LAUNCHERS
    assert 4 in {p["resources"].get("nodes", 1) for o in MANAGED for p in presets(o)}


def test_it_measures_three_models_in_full_lora_and_qlora() -> None:
    methods: dict[str, set[str]] = defaultdict(set)
    for obj in MANAGED:
        for preset in presets(obj):
            methods[preset["model"]].add(preset["method"])
            if preset["method"] == "QLoRA":
                assert preset["quantization"] == "nf4"
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", preset["model"])
    complete = [m for m, found in methods.items() if found >= {"Full", "LoRA", "QLoRA"}]
    assert len(complete) >= 3
    for obj in MANAGED:
        assert len({p["model"] for p in presets(obj)}) >= 3, by_name(obj)


def test_it_estimates_at_least_four_catalog_classes_per_runtime() -> None:
    classes = set(catalog().classes)
    for obj in MANAGED:
        estimate = obj["spec"]["estimate"]
        key = "secondsPerStep" if is_training(obj) else "secondsPerTask"
        assert set(estimate) == {key}, by_name(obj)
        assert len(estimate[key]) >= 4, by_name(obj)
        assert set(estimate[key]) <= classes
        assert all(v > 0 for v in estimate[key].values())


def test_every_preset_can_run_somewhere_with_an_expected_duration() -> None:
    for obj in MANAGED:
        estimate = obj["spec"]["estimate"]
        measured = set(estimate.get("secondsPerStep") or estimate.get("secondsPerTask"))
        for preset in presets(obj):
            matches = match_gpu(preset["resources"].get("gpu"), catalog())
            where = f"{by_name(obj)} {preset['model']} {preset['method']}"
            assert matches, where
            assert {m.variant.accelerator_class for m in matches} & measured, where


def test_each_parameters_schema_is_valid_and_its_defaults_validate() -> None:
    for obj in MANAGED + EXAMPLES:
        schema = obj["spec"]["parameters"]
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema.get("title"), by_name(obj)
        validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
        problems = [
            e.message
            for e in validator.iter_errors(obj["spec"]["defaults"]["parameters"])
            if e.validator != "required"  # defaults are merged under the job's values
        ]
        assert problems == [], by_name(obj)


def test_the_schemas_use_the_json_schema_vocabulary_a_form_needs() -> None:
    text = yaml.safe_dump([o["spec"]["parameters"] for o in MANAGED])
    for keyword in ("title:", "description:", "minimum:", "maximum:", "exclusiveMinimum:",
                    "enum:", "$defs:", "$ref:", "oneOf:", "default:", "examples:", "format:",
                    "items:", "uniqueItems:", "pattern:", "additionalProperties:"):  # fmt: skip
        assert keyword in text, keyword


def test_it_seeds_the_task_specific_contracts() -> None:
    runtimes = {o["spec"]["task"]: o["spec"] for o in MANAGED}
    grpo = runtimes["GRPO"]
    [sidecar] = grpo["defaults"]["sidecars"]
    assert sidecar["name"] == "vllm"
    assert "vllm" in " ".join(sidecar["command"])
    assert sidecar["startupTimeout"]
    assert runtimes["Distill"]["requires"]["teacher"] is True
    evaluate = [o["spec"] for o in MANAGED if o["spec"]["task"] == "Evaluate"]
    assert all(s["modes"] == ["Evaluate"] and "secondsPerTask" in s["estimate"] for s in evaluate)
    assert any(o["spec"].get("environmentTasks") == "AttemptAPI" for o in MANAGED)
    inits = [o["spec"]["defaults"].get("initCommand") for o in MANAGED]
    assert any(i and i["command"] and i["timeout"] for i in inits)
    for obj in MANAGED:
        assert obj["spec"]["outputs"]
        assert obj["spec"]["checkpointing"]["path"].startswith("/")


def test_images_are_digest_pinned_placeholders_with_image_users() -> None:
    digests = []
    for obj in MANAGED:
        match = IMAGE.match(obj["spec"]["image"])
        assert match, obj["spec"]["image"]
        assert match.group(1) == by_name(obj)
        digests.append(match.group(3))
    assert len(digests) == len(set(digests))
    users = [o["metadata"].get("annotations", {}).get("nodus.dev/image-user") for o in MANAGED]
    assert None in users
    assert {"trainer", "1000:1000"} <= set(users)


def test_the_example_is_one_runtime_for_project_demo() -> None:
    [example] = EXAMPLES
    assert example["metadata"]["namespace"] == "demo"
    assert example["kind"] == "TrainingRuntime"


def test_every_seeded_object_passes_validation() -> None:
    for obj in MANAGED + EXAMPLES:
        assert validation.validate_runtime(obj, catalog()) == [], by_name(obj)
        assert validation.validate_spec(obj["spec"], catalog()) == [], by_name(obj)
        assert validation.spec_warnings(obj["spec"], catalog()) == [], by_name(obj)


@pytest.mark.parametrize("obj", MANAGED + EXAMPLES, ids=by_name)
def test_a_job_compiles_against_every_preset(obj: dict[str, Any]) -> None:
    spec = obj["spec"]
    requires = spec.get("requires", {})
    for preset in presets(obj):
        draft: dict[str, Any] = {
            "model": preset["model"],
            "method": preset["method"],
            "quantization": preset.get("quantization", ""),
            "parameters": {"script": "train.py"}
            if "script" in spec["parameters"].get("required", [])
            else {},
            **({"steps": 1000} if is_training(obj) else {"tasks": 50}),
        }
        for name in ("data", "teacher", "environment"):
            if requires.get(name):
                draft[name] = {"name": f"some-{name}"}
        result = compile_job(obj, draft, catalog())
        assert isinstance(result, CompileResult), (preset, result)
        assert result.offerings, preset
        assert result.offerings[0].seconds is not None
        assert result.offerings[0].cost > 0
