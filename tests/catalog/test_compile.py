"""Compiling a TrainingJob draft against a runtime: presets, parameters, requirements, plans."""

from __future__ import annotations

import copy

import orjson
import pytest

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.catalog.accelerators import AcceleratorCatalog, parse_catalog
from runtimes.catalog.compile import CompileResult, compile_job, deep_merge, provenance


def offering(count: int, cpu: str, memory: str, disk: str, price: float) -> dict:
    return {"count": count, "cpu": cpu, "memory": memory, "disk": disk, "pricePerHour": price}


@pytest.fixture(scope="module")
def catalog() -> AcceleratorCatalog:
    return parse_catalog(
        {
            "families": [
                {"name": "H100", "vendor": "NVIDIA", "variants": [
                    {"id": "h100-80g-sxm", "memory": "80Gi", "nvlink": True,
                     "acceleratorClass": "h100-80g",
                     "offerings": [offering(1, "26", "225Gi", "1Ti", 3.0),
                                   offering(8, "208", "1800Gi", "8Ti", 24.0)]},
                ]},
                {"name": "A100", "vendor": "NVIDIA", "variants": [
                    {"id": "a100-40g-sxm", "memory": "40Gi", "nvlink": True,
                     "acceleratorClass": "a100-40g",
                     "offerings": [offering(1, "12", "85Gi", "512Gi", 1.2)]},
                    {"id": "a100-80g-sxm", "memory": "80Gi", "nvlink": True,
                     "acceleratorClass": "a100-80g",
                     "offerings": [offering(1, "12", "170Gi", "1Ti", 1.8),
                                   offering(8, "96", "1360Gi", "8Ti", 14.4)]},
                ]},
                {"name": "L4", "vendor": "NVIDIA", "variants": [
                    {"id": "l4-24g-pcie", "memory": "24Gi", "nvlink": False,
                     "acceleratorClass": "l4-24g",
                     "offerings": [offering(1, "4", "16Gi", "200Gi", 0.5)]},
                ]},
            ]
        }
    )  # fmt: skip


SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["learningRate"],
    "properties": {
        "learningRate": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "batchSize": {"type": "integer", "minimum": 1, "maximum": 512},
        "gradientAccumulation": {"type": "integer", "minimum": 1},
        "scheduler": {"enum": ["linear", "cosine", "constant"]},
        "lora": {"$ref": "#/$defs/lora"},
        "optimizer": {
            "oneOf": [
                {"type": "object", "additionalProperties": False, "required": ["name"],
                 "properties": {"name": {"const": "adamw"},
                                "beta2": {"type": "number", "minimum": 0, "maximum": 1}}},
                {"type": "object", "additionalProperties": False, "required": ["name"],
                 "properties": {"name": {"const": "sgd"}, "momentum": {"type": "number"}}},
            ]
        },
    },
    "$defs": {
        "lora": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "r": {"type": "integer", "minimum": 1, "maximum": 256},
                "alpha": {"type": "integer", "minimum": 1},
                "targetModules": {"type": "array", "items": {"type": "string"},
                                  "minItems": 1, "uniqueItems": True},
            },
        }
    },
}  # fmt: skip

RUNTIME = {
    "apiVersion": "nodus.dev/v1beta1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "sft-test", "namespace": "nodus"},
    "spec": {
        "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "0" * 63 + "1",
        "task": "SFT",
        "command": ["python", "-m", "trainer"],
        "requires": {"data": True, "model": True},
        "parameters": SCHEMA,
        "defaults": {
            "parameters": {
                "learningRate": 0.0002,
                "batchSize": 8,
                "gradientAccumulation": 1,
                "scheduler": "cosine",
                "lora": {"r": 16, "alpha": 32, "targetModules": ["q_proj", "v_proj"]},
            },
            "resources": {"cpu": "8", "memory": "64Gi", "disk": "200Gi"},
        },
        "presets": [
            {"model": "Qwen/Qwen3-8B", "method": "LoRA", "quantization": "",
             "resources": {"cpu": "16", "memory": "96Gi",
                           "gpu": {"type": ["A100", "H100"], "count": 1, "minMemory": "48Gi"}}},
            {"model": "Qwen/Qwen3-8B", "method": "QLoRA", "quantization": "nf4",
             "resources": {"gpu": {"type": ["L4"], "count": 1}}},
            {"model": "Qwen/Qwen3-8B", "method": "Full",
             "resources": {"memory": "1Ti", "nodes": 2,
                           "gpu": {"type": ["H100"], "count": 8, "interconnect": "NVLink"}}},
            {"model": "meta-llama/Llama-3.1-8B", "method": "LoRA",
             "resources": {"gpu": {"type": ["a100-80g-sxm"], "count": 1, "exact": True}}},
        ],
        "estimate": {"secondsPerStep": {"h100-80g": 0.5, "a100-80g": 1.2, "a100-40g": 2.0}},
    },
}  # fmt: skip

DRAFT = {
    "model": "Qwen/Qwen3-8B",
    "method": "LoRA",
    "data": {"dataset": "HuggingFaceH4/ultrachat_200k"},
    "steps": 1000,
    "parameters": {"batchSize": 16, "lora": {"r": 64}},
}


def compiled(catalog: AcceleratorCatalog, **changes: object) -> CompileResult:
    draft = {**copy.deepcopy(DRAFT), **changes}
    result = compile_job(RUNTIME, draft, catalog)
    assert isinstance(result, CompileResult), result
    return result


def errors(catalog: AcceleratorCatalog, runtime: dict | None = None, **changes: object) -> list:
    draft = {k: v for k, v in {**copy.deepcopy(DRAFT), **changes}.items() if v is not None}
    result = compile_job(runtime or RUNTIME, draft, catalog)
    assert isinstance(result, list), result
    assert all(isinstance(e, FieldError) for e in result)
    return [(e.field, e.reason, e.message) for e in result]


def test_it_picks_the_preset_for_the_exact_model_method_and_quantization(
    catalog: AcceleratorCatalog,
) -> None:
    assert compiled(catalog).preset["method"] == "LoRA"
    qlora = compiled(catalog, method="QLoRA", quantization="nf4")
    assert qlora.preset["quantization"] == "nf4"
    assert [p.offering.variant for p in qlora.offerings] == ["l4-24g-pcie"]


def test_it_points_at_the_model_or_method_without_a_preset(catalog: AcceleratorCatalog) -> None:
    assert errors(catalog, model="Qwen/Qwen3-0.6B") == [
        ("model", "FieldValueNotSupported",
         'Unsupported value: "Qwen/Qwen3-0.6B": supported values: '
         '"Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B"'),
    ]  # fmt: skip
    assert errors(catalog, model="meta-llama/Llama-3.1-8B", method="Full") == [
        ("method", "FieldValueNotSupported",
         'Unsupported value: "Full": supported values: "LoRA"'),
    ]  # fmt: skip
    assert errors(catalog, method="QLoRA") == [
        ("quantization", "FieldValueNotSupported",
         'Unsupported value: "": supported values: "nf4"'),
    ]  # fmt: skip
    assert errors(catalog, method=None) == [
        ("method", "FieldValueRequired",
         "Required value: this runtime has LoRA, QLoRA, Full for Qwen/Qwen3-8B"),
    ]  # fmt: skip


def test_it_merges_default_parameters_under_the_job_and_says_where_each_came_from(
    catalog: AcceleratorCatalog,
) -> None:
    result = compiled(catalog)
    assert result.parameters == {
        "learningRate": 0.0002,
        "batchSize": 16,
        "gradientAccumulation": 1,
        "scheduler": "cosine",
        "lora": {"r": 64, "alpha": 32, "targetModules": ["q_proj", "v_proj"]},
    }
    assert result.provenance == {
        "/learningRate": "default",
        "/batchSize": "job",
        "/gradientAccumulation": "default",
        "/scheduler": "default",
        "/lora/r": "job",
        "/lora/alpha": "default",
        "/lora/targetModules": "default",
    }


def test_it_reports_each_parameter_error_at_its_path_in_the_draft(
    catalog: AcceleratorCatalog,
) -> None:
    bad = {
        "learningRate": 0,
        "batchSize": 1024,
        "scheduler": "step",
        "lora": {"r": "64", "targetModules": ["q_proj", "q_proj"], "rank": 8},
        "warmup": 10,
    }
    assert errors(catalog, parameters=bad) == [
        ("parameters.batchSize", "FieldValueInvalid",
         "Invalid value: 1024: must be less than or equal to 512"),
        ("parameters.learningRate", "FieldValueInvalid",
         "Invalid value: 0: must be greater than 0"),
        ("parameters.lora.r", "FieldValueInvalid",
         'Invalid value: "64": must be of type integer'),
        ("parameters.lora.rank", "FieldValueForbidden",
         "Forbidden: not a parameter this runtime accepts"),
        ("parameters.lora.targetModules", "FieldValueDuplicate",
         'Duplicate value: ["q_proj","q_proj"]'),
        ("parameters.scheduler", "FieldValueNotSupported",
         'Unsupported value: "step": supported values: "linear", "cosine", "constant"'),
        ("parameters.warmup", "FieldValueForbidden",
         "Forbidden: not a parameter this runtime accepts"),
    ]  # fmt: skip


def test_it_requires_what_the_schema_requires_after_merging(catalog: AcceleratorCatalog) -> None:
    runtime = copy.deepcopy(RUNTIME)
    del runtime["spec"]["defaults"]["parameters"]["learningRate"]
    assert errors(catalog, runtime=runtime) == [
        ("parameters.learningRate", "FieldValueRequired", "Required value"),
    ]
    assert isinstance(compile_job(runtime, {**DRAFT, "parameters": {"learningRate": 1e-4}},
                                  catalog), CompileResult)  # fmt: skip


def test_it_explains_a_one_of_by_the_form_the_value_names(catalog: AcceleratorCatalog) -> None:
    assert errors(catalog, parameters={"optimizer": {"name": "adamw", "beta2": 2}}) == [
        ("parameters.optimizer.beta2", "FieldValueInvalid",
         "Invalid value: 2: must be less than or equal to 1"),
    ]  # fmt: skip
    assert errors(catalog, parameters={"optimizer": {"name": "lion"}}) == [
        ("parameters.optimizer", "FieldValueInvalid",
         'Invalid value: {"name":"lion"}: must match exactly one of the allowed forms '
         "(adamw, sgd)"),
    ]  # fmt: skip


def test_it_checks_required_inputs(catalog: AcceleratorCatalog) -> None:
    assert errors(catalog, data=None) == [("data", "FieldValueRequired", "Required value")]
    assert errors(catalog, model=None) == [("model", "FieldValueRequired", "Required value")]
    result = compiled(catalog, teacher="Qwen/Qwen3-32B")
    assert [r.as_dict() for r in result.requirements] == [
        {"name": "data", "required": True, "given": True},
        {"name": "model", "required": True, "given": True},
        {"name": "teacher", "required": False, "given": True},
        {"name": "environment", "required": False, "given": False},
    ]


def test_it_plans_each_matching_offering_fastest_first(catalog: AcceleratorCatalog) -> None:
    result = compiled(catalog)
    # The LoRA preset asks for A100 or H100 with >= 48Gi: a100-40g-sxm is filtered out.
    # h100: 1000 steps x 0.5 s x (batch 16 / 8 = 2) = 1000 s; 1000/3600 h x $3.00 = $0.8333
    # a100-80g: 1000 x 1.2 x 2 = 2400 s; 2400/3600 h x $1.80 = $1.20
    assert [(p.offering.variant, p.seconds, p.cost) for p in result.offerings] == [
        ("h100-80g-sxm", 1000.0, 0.8333),
        ("a100-80g-sxm", 2400.0, 1.2),
    ]
    # Floors: the preset's cpu 16 / memory 96Gi over the defaults' disk 200Gi, then each raised
    # to the host: h100 host 26 vCPU / 225Gi / 1Ti.
    assert result.offerings[0].resources == {
        "cpu": "26",
        "memory": "225Gi",
        "disk": "1Ti",
        "gpu": {"type": ["h100-80g-sxm"], "count": 1, "exact": True},
    }
    # a100-80g host 12 vCPU (< 16: floor stays), 170Gi, 1Ti.
    assert result.offerings[1].resources["cpu"] == "16"
    assert result.offerings[1].resources["memory"] == "170Gi"
    assert [r.kind for r in result.offerings[1].match.reasons] == ["Family", "Memory", "Count"]


def test_it_takes_each_resource_of_the_preset_whole(catalog: AcceleratorCatalog) -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["defaults"]["resources"]["gpu"] = {"type": ["H100"], "minMemory": "80Gi"}
    qlora = compile_job(runtime, {**DRAFT, "method": "QLoRA", "quantization": "nf4"}, catalog)
    # The QLoRA preset's own request (L4, no floor) stands; the default's 80Gi does not leak in.
    assert qlora.resources["gpu"] == {"type": ["L4"], "count": 1}
    assert [p.offering.variant for p in qlora.offerings] == ["l4-24g-pcie"]
    assert qlora.resources["disk"] == "200Gi"  # unset in the preset: the default's


def test_it_charges_every_node_of_a_multi_node_preset(catalog: AcceleratorCatalog) -> None:
    result = compiled(catalog, method="Full", steps=7200, parameters={})
    # nodes 2 x 8 x H100: 7200 x 0.5 = 3600 s = 1 h; $24.00/h per node x 2 nodes = $48.00
    [plan] = result.offerings
    assert (plan.offering.count, plan.nodes, plan.seconds, plan.cost) == (8, 2, 3600.0, 48.0)
    assert plan.resources["memory"] == "1800Gi"  # the host's 1800Gi beats the 1Ti floor


def test_it_narrows_to_the_drafts_accelerator(catalog: AcceleratorCatalog) -> None:
    by_family = compiled(catalog, accelerator="A100")
    assert [p.offering.variant for p in by_family.offerings] == ["a100-80g-sxm"]
    by_id = compiled(catalog, accelerator="h100-80g-sxm")
    assert [p.offering.variant for p in by_id.offerings] == ["h100-80g-sxm"]
    assert errors(catalog, accelerator="L4") == [
        ("accelerator", "FieldValueInvalid",
         'Invalid value: "L4": does not satisfy the runtime\'s GPU request; '
         "choose a100-80g-sxm, h100-80g-sxm"),
    ]  # fmt: skip
    [(field, reason, _)] = errors(catalog, accelerator="TPUv5")
    assert (field, reason) == ("accelerator", "FieldValueNotSupported")


def test_it_keeps_offerings_without_a_measurement_and_warns(catalog: AcceleratorCatalog) -> None:
    result = compiled(catalog, method="QLoRA", quantization="nf4")
    [plan] = result.offerings
    assert (plan.seconds, plan.cost) == (None, None)
    assert result.warnings == ("no measured step time for l4-24g",)


def test_it_rejects_bad_work(catalog: AcceleratorCatalog) -> None:
    assert errors(catalog, steps=0) == [
        ("steps", "FieldValueInvalid", "Invalid value: 0: must be a positive integer"),
    ]
    assert errors(catalog, tasks=5) == [
        ("tasks", "FieldValueForbidden", "Forbidden: set steps (training) or tasks, not both"),
    ]
    assert compiled(catalog, steps=None).offerings[0].seconds is None
    assert errors(catalog, steps=None, tasks=5) == [
        ("tasks", "FieldValueForbidden", "Forbidden: this runtime does not evaluate: set steps"),
    ]


def test_it_times_an_evaluation_by_tasks(catalog: AcceleratorCatalog) -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["modes"] = ["Evaluate"]
    runtime["spec"]["estimate"] = {"secondsPerTask": {"a100-80g": 30}}
    result = compile_job(runtime, {**DRAFT, "steps": None, "tasks": 60,
                                   "accelerator": "A100"}, catalog)  # fmt: skip
    assert isinstance(result, CompileResult)
    # 60 tasks x 30 s = 1800 s = 0.5 h on a100-80g at $1.80/h = $0.90; batch 16 plays no part.
    assert [(p.offering.variant, p.seconds, p.cost) for p in result.offerings] == [
        ("a100-80g-sxm", 1800.0, 0.9),
    ]
    assert errors(catalog, runtime=runtime) == [
        ("steps", "FieldValueForbidden", "Forbidden: this runtime only evaluates: set tasks"),
    ]


def test_it_collects_every_error_at_once(catalog: AcceleratorCatalog) -> None:
    fields = [f for f, _, _ in errors(catalog, data=None, model="x/y", steps=-1,
                                      parameters={"batchSize": 0})]  # fmt: skip
    assert fields == ["data", "model", "parameters.batchSize", "steps"]


def test_it_compiles_without_presets_or_gpus(catalog: AcceleratorCatalog) -> None:
    runtime = copy.deepcopy(RUNTIME)
    del runtime["spec"]["presets"]
    result = compile_job(runtime, DRAFT, catalog)
    assert isinstance(result, CompileResult)
    assert (result.preset, result.offerings, result.warnings) == (None, (), ())
    assert result.resources == {"cpu": "8", "memory": "64Gi", "disk": "200Gi"}
    assert errors(catalog, runtime=runtime, accelerator="A100") == [
        ("accelerator", "FieldValueInvalid",
         'Invalid value: "A100": this runtime runs without GPUs'),
    ]  # fmt: skip


def test_it_serialises_the_result_to_json(catalog: AcceleratorCatalog) -> None:
    body = orjson.loads(orjson.dumps(compiled(catalog).as_dict()))
    assert body["runtime"] == {"name": "sft-test", "namespace": "nodus"}
    assert body["work"] == {"steps": 1000}
    assert body["offerings"][0]["accelerator"] == "h100-80g-sxm"
    assert body["offerings"][0]["cost"] == 0.8333
    assert body["offerings"][0]["reasons"][0] == {"kind": "Family", "message": "family H100"}
    assert body["provenance"]["/lora/r"] == "job"
    assert body["requirements"][0] == {"name": "data", "required": True, "given": True}


def test_it_merges_objects_deeply_and_replaces_everything_else() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    # A JSON merge patch: objects merge, arrays are replaced, null removes (here d, and e,
    # which was never there).
    assert deep_merge(base, {"a": {"c": [3]}, "d": None, "e": None}) == {"a": {"b": 1, "c": [3]}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert provenance({"a/b": 1, "t~": {"x": 2}}, {"t~": {"x": 2}}) == {
        "/a~1b": "default",
        "/t~0/x": "job",
    }
