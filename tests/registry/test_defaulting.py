"""Defaulting: fills what is unset, never overrides, shows the defaults, is idempotent."""

from __future__ import annotations

import copy

from runtimes.registry.trainingruntime.defaulting import default_spec
from tests.invalid_manifests import base

MINIMAL = {"image": "x", "task": "SFT", "command": ["train"]}


def test_it_fills_the_contracts_defaults_into_a_minimal_spec() -> None:
    assert default_spec(MINIMAL) == {
        **MINIMAL,
        "launcher": "Plain",
        "modes": ["Train"],
        "requires": {"model": True},
        "checkpointing": {"path": "/nodus/state", "strategy": "HFTrainer"},
    }


def test_it_never_overrides_a_value_that_is_set() -> None:
    spec = {
        **MINIMAL,
        "launcher": "Deepspeed",
        "modes": ["Evaluate"],
        "requires": {"model": False},
        "checkpointing": {"path": "/ckpt", "strategy": "Custom"},
        "defaults": {
            "resources": {"gpu": {"type": ["H100"], "count": 1, "interconnect": "NVLink"}}
        },
    }
    assert default_spec(spec) == spec


def test_it_defaults_the_interconnect_of_every_gpu_request() -> None:
    spec = {
        **MINIMAL,
        "defaults": {"resources": {"gpu": {"type": ["H100"], "count": 1}}},
        "presets": [
            {"model": "a/b", "method": "Full", "resources": {"gpu": {"type": ["L4"], "count": 1}}},
            {"model": "a/b", "method": "LoRA", "resources": {"cpu": "4"}},
        ],
    }
    result = default_spec(spec)
    assert result["defaults"]["resources"]["gpu"]["interconnect"] == "Any"
    assert result["presets"][0]["resources"]["gpu"]["interconnect"] == "Any"
    assert "gpu" not in result["presets"][1]["resources"]  # no GPU request, nothing to default


def test_it_does_not_invent_resources_or_presets() -> None:
    result = default_spec(MINIMAL)
    assert "defaults" not in result
    assert "presets" not in result


def test_it_treats_null_as_unset() -> None:
    result = default_spec({**MINIMAL, "launcher": None, "requires": None})
    assert result["launcher"] == "Plain"
    assert result["requires"] == {"model": True}


def test_it_leaves_values_of_the_wrong_type_for_validation() -> None:
    spec = {**MINIMAL, "requires": "yes", "checkpointing": [], "presets": "many", "modes": "Train"}
    assert default_spec(spec) == {**spec, "launcher": "Plain"}
    assert default_spec("not a spec") == "not a spec"  # type: ignore[arg-type]


def test_it_does_not_change_its_argument() -> None:
    spec = base()["spec"]
    before = copy.deepcopy(spec)
    default_spec(spec)
    assert spec == before


def test_it_is_idempotent() -> None:
    for spec in (MINIMAL, base()["spec"]):
        once = default_spec(spec)
        assert default_spec(once) == once


def test_it_keeps_free_form_parameters_as_they_are() -> None:
    spec = {**MINIMAL, "parameters": {"type": "object", "properties": {"launcher": {}}}}
    assert default_spec(spec)["parameters"] == spec["parameters"]
