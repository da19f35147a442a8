"""Default parameters under a job's: JSON merge-patch rules, and alternatives replaced whole.

The managed catalog is the corpus: every runtime times every branch of every oneOf/anyOf in its
parameter schema is chosen by a job, and the job must compile with exactly that branch.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import CompileResult, compile_job
from runtimes.catalog.merge import merge_parameters
from runtimes.registry.seeding import MANAGED_CATALOG, load_manifests

RUNTIMES = load_manifests(MANAGED_CATALOG)
OPTIMIZER = {
    "type": "object",
    "properties": {
        "optimizer": {"$ref": "#/$defs/optimizer"},
        "lora": {"type": "object", "properties": {"r": {"type": "integer"}}},
        "loss": {"type": "object", "properties": {"kind": {"type": "string"}}},
    },
    "$defs": {
        "optimizer": {
            "oneOf": [
                {"properties": {"name": {"const": "adamw"}, "epsilon": {"type": "number"}}},
                {"properties": {"name": {"const": "sgd"}, "momentum": {"type": "number"}}},
            ]
        }
    },
}
DEFAULTS = {"optimizer": {"name": "adamw", "epsilon": 1e-8}, "lora": {"r": 16, "alpha": 32}}


def test_it_merges_objects_and_lets_null_remove_a_default() -> None:
    merged = merge_parameters(OPTIMIZER, DEFAULTS, {"lora": {"r": 8, "alpha": None}, "x": 1})
    assert merged == {"optimizer": {"name": "adamw", "epsilon": 1e-8}, "lora": {"r": 8}, "x": 1}
    assert merge_parameters(OPTIMIZER, DEFAULTS, {"lora": None}) == {
        "optimizer": {"name": "adamw", "epsilon": 1e-8}
    }
    assert DEFAULTS["lora"] == {"r": 16, "alpha": 32}  # the arguments are left alone


def test_it_replaces_the_default_where_the_schema_offers_alternatives() -> None:
    merged = merge_parameters(OPTIMIZER, DEFAULTS, {"optimizer": {"name": "sgd"}})
    assert merged["optimizer"] == {"name": "sgd"}
    # The same branch merges: only the value the job names moves.
    merged = merge_parameters(OPTIMIZER, DEFAULTS, {"optimizer": {"epsilon": 1e-6}})
    assert merged["optimizer"] == {"epsilon": 1e-6}


def test_it_replaces_an_object_whose_name_differs_without_a_oneof() -> None:
    schema = {"type": "object", "properties": {"scheduler": {"type": "object"}}}
    defaults = {"scheduler": {"name": "cosine", "warmup": 100}}
    assert merge_parameters(schema, defaults, {"scheduler": {"name": "constant"}}) == {
        "scheduler": {"name": "constant"}
    }
    assert merge_parameters(schema, defaults, {"scheduler": {"name": "cosine", "warmup": 5}}) == {
        "scheduler": {"name": "cosine", "warmup": 5}
    }


def test_it_stops_following_a_reference_loop() -> None:
    schema = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}}
    assert merge_parameters(schema, {"a": {"b": 1}}, {"a": {"c": 2}}) == {"a": {"b": 1, "c": 2}}


def _resolve(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    for _ in range(32):
        if not isinstance(schema, Mapping) or "$ref" not in schema:
            break
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema if isinstance(schema, Mapping) else {}


def _sample(schema: Any, root: Mapping[str, Any]) -> Any:
    """A small value the schema accepts: defaults where it has them."""
    node = _resolve(schema, root)
    if "const" in node:
        return node["const"]
    if "default" in node:
        return node["default"]
    if node.get("enum"):
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {k: _sample(props[k], root) for k in node.get("required") or [] if k in props}
    if kind == "integer":
        return max(1, int(node.get("minimum", 1)))
    if kind == "number":
        return node.get("minimum", 0.5)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    return "x"


def _alternatives(
    schema: Any, root: Mapping[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(property path, a value of one branch) for every branch of every oneOf/anyOf."""
    node = _resolve(schema, root)
    for keyword in ("oneOf", "anyOf"):
        for branch in node.get(keyword) or []:
            if path:
                yield path, _sample(branch, root)
    for key, child in (node.get("properties") or {}).items():
        if len(path) < 6:
            yield from _alternatives(child, root, (*path, key))


def _draft(runtime: Mapping[str, Any]) -> dict[str, Any]:
    spec = runtime["spec"]
    requires = spec.get("requires") or {}
    draft: dict[str, Any] = {}
    if spec.get("presets"):
        preset = spec["presets"][0]
        draft |= {"model": preset["model"], "method": preset["method"]}
        if preset.get("quantization"):
            draft["quantization"] = preset["quantization"]
    elif requires.get("model", True):
        draft["model"] = "Qwen/Qwen3-0.6B"
    if requires.get("data"):
        draft["data"] = "hf://datasets/nodus/alpaca"
    if requires.get("teacher"):
        draft["teacher"] = "Qwen/Qwen3-8B"
    if requires.get("environment"):
        draft["environment"] = "nodus/webshop"
    return draft


def _cases() -> list[Any]:
    cases = []
    for runtime in RUNTIMES:
        schema = runtime["spec"]["parameters"]
        for index, (path, value) in enumerate(_alternatives(schema, schema)):
            name = f"{runtime['metadata']['name']}:{'.'.join(path)}:{index}"
            cases.append(pytest.param(runtime, path, value, id=name))
    return cases


CASES = _cases()


def test_the_managed_catalog_offers_alternatives_to_choose() -> None:
    assert len({c.values[0]["metadata"]["name"] for c in CASES}) >= 10


@pytest.mark.parametrize(("runtime", "path", "value"), CASES)
def test_every_branch_of_every_managed_runtime_compiles(
    runtime: dict[str, Any], path: tuple[str, ...], value: Any
) -> None:
    parameters: dict[str, Any] = {}
    target = parameters
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    outcome = compile_job(runtime, {**_draft(runtime), "parameters": parameters}, catalog())
    assert isinstance(outcome, CompileResult), outcome
    merged: Any = outcome.parameters
    for key in path:
        merged = merged[key]
    assert merged == value  # the branch the job chose, with nothing of the default's mixed in
