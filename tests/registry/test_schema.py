"""The resource schema: field help, unknown fields, pruning, and its own consistency."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from runtimes.apimachinery.formats import known_formats
from runtimes.apimachinery.structural import structural_errors
from runtimes.registry.trainingruntime.schema import (
    SELECTABLE_FIELDS,
    SPEC,
    TRAINING_RUNTIME,
    Field,
    field_help,
    node_at,
    path_segments,
    prune_unknown,
    unknown_fields,
)
from tests.invalid_manifests import base


def _walk(node: Field, path: str = "") -> Iterator[tuple[str, Field]]:
    yield path, node
    for key, child in node.properties.items():
        yield from _walk(child, f"{path}.{key}" if path else key)
    if node.items is not None:
        yield from _walk(node.items, f"{path}[]")
    if node.values is not None:
        yield from _walk(node.values, f"{path}[*]")


def test_it_describes_every_named_field() -> None:
    undescribed = [
        path
        for path, node in _walk(TRAINING_RUNTIME)
        if path and not path.endswith(("[]", "[*]")) and not node.description
    ]
    assert undescribed == []


def test_it_only_names_formats_that_have_a_check() -> None:
    used = {node.format for _, node in _walk(TRAINING_RUNTIME) if node.format}
    assert used <= known_formats()


def test_it_declares_defaults_that_its_own_rules_accept() -> None:
    for path, node in _walk(TRAINING_RUNTIME):
        if node.default is not None:
            assert structural_errors(node.default, node, path) == [], path


def test_it_keys_list_maps_by_required_fields() -> None:
    for path, node in _walk(TRAINING_RUNTIME):
        if node.list_type == "map":
            assert node.items is not None
            assert set(node.list_keys) <= set(node.items.required), path


def test_it_can_select_on_fields_that_exist() -> None:
    for path in SELECTABLE_FIELDS:
        assert node_at(path) is not None, path


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("spec.launcher", "Plain (default)"),
        ("spec.presets[2].resources.gpu.count", "1, 2, 4 or 8"),
        ("spec.presets.resources.gpu.count", "1, 2, 4 or 8"),
        ("spec.defaults.sidecars[0].env[1].valueFrom.secretKeyRef.key", "key within the Secret"),
        ("spec.checkpointing.path", "/nodus/state"),
        ("metadata.labels", "Labels"),
        ("status.phase", "Pending"),
        ("spec.estimate.secondsPerStep[h100-80g]", "greater than zero"),
    ],
)
def test_it_helps_with_any_field_path(path: str, words: str) -> None:
    assert words in (field_help(path) or "")


@pytest.mark.parametrize(
    "path", ["spec.nope", "spec.image.deeper", "nope", "spec.presets[0].model.x"]
)
def test_it_has_no_help_for_unknown_fields(path: str) -> None:
    assert field_help(path) is None


def test_it_splits_paths_into_names_and_keys() -> None:
    assert path_segments("spec.presets[2].resources") == ["spec", "presets", "[2]", "resources"]
    assert path_segments("spec.estimate.secondsPerStep[h100-80g]")[-1] == "[h100-80g]"


def test_it_finds_unknown_fields_at_every_depth() -> None:
    runtime = base()
    runtime["spec"]["foo"] = 1
    runtime["spec"]["presets"][1]["bar"] = True
    runtime["spec"]["presets"][0]["resources"]["gpu"]["vendor"] = "nvidia"
    runtime["spec"]["defaults"]["sidecars"][0]["env"][0]["secret"] = "x"
    runtime["metadata"]["labelz"] = {}
    runtime["status"] = {"phase": "Ready", "extra": 1}
    runtime["spec"]["estimate"]["secondsPerStep"]["h100-80g"] = 0.2
    assert unknown_fields(runtime) == [
        "metadata.labelz",
        "spec.defaults.sidecars[0].env[0].secret",
        "spec.presets[0].resources.gpu.vendor",
        "spec.presets[1].bar",
        "spec.foo",
        "status.extra",
    ]
    assert unknown_fields(runtime["spec"], SPEC, "spec")[-1] == "spec.foo"


def test_it_leaves_parameter_schemas_free_form() -> None:
    runtime = base()
    runtime["spec"]["parameters"]["x-ui-order"] = ["epochs"]
    runtime["spec"]["defaults"]["parameters"]["anything"] = {"goes": True}
    assert unknown_fields(runtime) == []


def test_it_prunes_exactly_the_unknown_fields() -> None:
    runtime = base()
    expected = base()
    runtime["spec"]["foo"] = 1
    runtime["spec"]["presets"][1]["bar"] = True
    runtime["spec"]["parameters"]["x-keep"] = 1
    expected["spec"]["parameters"]["x-keep"] = 1
    assert prune_unknown(runtime) is runtime
    assert runtime == expected
    assert unknown_fields(runtime) == []


def test_it_ignores_values_of_the_wrong_type_when_looking_for_unknown_fields() -> None:
    assert unknown_fields({"spec": {"presets": "x", "defaults": [1]}}) == []
    assert prune_unknown({"spec": "x", "bogus": 1}) == {"spec": "x"}
