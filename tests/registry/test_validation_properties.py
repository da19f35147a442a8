"""Properties: generated valid specs are accepted, defaulting is idempotent, and no mutation of
a spec, however odd, makes validation raise instead of returning field errors."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.registry.trainingruntime.defaulting import default_spec
from runtimes.registry.trainingruntime.schema import (
    CHECKPOINT_STRATEGIES,
    GANG_LAUNCHERS,
    GPU_COUNTS,
    INTERCONNECTS,
    LAUNCHERS,
    MODES,
    TASKS,
    prune_unknown,
    unknown_fields,
)
from runtimes.registry.trainingruntime.validation import (
    spec_warnings,
    validate_runtime,
    validate_spec,
    validate_status,
)
from tests.invalid_manifests import base, stub_catalog

CATALOG = stub_catalog()
REASONS = {
    "FieldValueRequired",
    "FieldValueInvalid",
    "FieldValueTypeInvalid",
    "FieldValueNotSupported",
    "FieldValueDuplicate",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueForbidden",
}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_hex = st.text("0123456789abcdef", min_size=64, max_size=64)
_label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
_token = st.from_regex(r"\A[A-Za-z0-9]([A-Za-z0-9._-]{0,8}[A-Za-z0-9])?\Z")
_arg = st.text(min_size=1, max_size=12)
_argv = st.lists(_arg, min_size=1, max_size=4)
_quantity = st.one_of(
    st.builds(
        lambda n, s: f"{n}{s}",
        st.integers(1, 4096),
        st.sampled_from(["", "m", "k", "Mi", "Gi", "Ti"]),
    ),
    st.integers(1, 512),
)
_duration = st.builds(lambda n, unit: f"{n}{unit}", st.integers(1, 30), st.sampled_from(["s", "m"]))
_image = st.builds(
    lambda repo, tag, digest: f"{repo}{tag}@sha256:{digest}",
    st.sampled_from(["registry.nodus.dev/trainers/sft", "localhost:5000/t", "ghcr.io/org/x_y"]),
    st.sampled_from(["", ":v1", ":latest"]),
    _hex,
)


@st.composite
def _gpu(draw: st.DrawFn) -> dict[str, Any]:
    exact = draw(st.booleans())
    names = list(CATALOG.ids) if exact else list(CATALOG.ids) + list(CATALOG.families)
    gpu: dict[str, Any] = {
        "type": draw(st.lists(st.sampled_from(names), min_size=1, max_size=8, unique=True)),
        "count": draw(st.sampled_from(GPU_COUNTS)),
    }
    if exact or draw(st.booleans()):
        gpu["exact"] = exact
    if draw(st.booleans()):
        gpu["interconnect"] = draw(st.sampled_from(INTERCONNECTS))
    if draw(st.booleans()):
        gpu["minMemory"] = draw(_quantity)
    return gpu


@st.composite
def _resources(draw: st.DrawFn, launcher: str) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    for key in ("cpu", "memory", "disk"):
        if draw(st.booleans()):
            resources[key] = draw(_quantity)
    if draw(st.booleans()):
        resources["nodes"] = draw(st.integers(1, 4)) if launcher in GANG_LAUNCHERS else 1
    if draw(st.booleans()):
        resources["gpu"] = draw(_gpu())
    return resources


@st.composite
def valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    launcher = draw(st.sampled_from((None, *LAUNCHERS)))
    spec: dict[str, Any] = {
        "image": draw(_image),
        "task": draw(st.sampled_from(TASKS)),
        "command": draw(_argv),
    }
    if launcher:
        spec["launcher"] = launcher
    if draw(st.booleans()):
        spec["modes"] = draw(st.lists(st.sampled_from(MODES), min_size=1, unique=True))
    if draw(st.booleans()):
        keys = ("data", "environment", "model", "teacher")
        spec["requires"] = draw(
            st.fixed_dictionaries({}, optional={k: st.booleans() for k in keys})
        )
    if draw(st.booleans()):
        spec["parameters"] = {
            "type": "object",
            "properties": {"epochs": {"type": "integer", "minimum": 1}, "lr": {"type": "number"}},
            "required": ["epochs"],
        }
    defaults: dict[str, Any] = {}
    if draw(st.booleans()):
        defaults["initCommand"] = {"command": draw(_argv), "timeout": draw(_duration)}
    if "parameters" in spec and draw(st.booleans()):
        defaults["parameters"] = {"lr": draw(st.floats(0.0001, 1))}
    if draw(st.booleans()):
        defaults["resources"] = draw(_resources(launcher or "Plain"))
    names = draw(st.lists(_label, max_size=3, unique=True))
    if names:
        defaults["sidecars"] = [
            {"name": n, "command": draw(_argv), "startupTimeout": draw(_duration)} for n in names
        ]
    if defaults:
        spec["defaults"] = defaults
    triples = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B"]),
                st.sampled_from(["Full", "LoRA", "QLoRA"]),
                st.sampled_from(["", "nf4", "int8"]),
            ).filter(lambda t: t[1] != "QLoRA" or t[2]),
            max_size=4,
            unique=True,
        )
    )
    if triples:
        spec["presets"] = [
            {
                "model": m,
                "method": k,
                "quantization": q,
                "resources": draw(_resources(launcher or "Plain")),
            }
            for m, k, q in triples
        ]
    times = st.dictionaries(st.sampled_from(CATALOG.classes), st.floats(0.001, 100), max_size=4)
    spec["estimate"] = {"secondsPerStep": draw(times), "secondsPerTask": draw(times)}
    outputs = draw(st.lists(_token, max_size=3, unique=True))
    spec["outputs"] = [{"name": n, "path": f"/nodus/outputs/{n}"} for n in outputs]
    if draw(st.booleans()):
        spec["checkpointing"] = {
            "path": "/ckpt",
            "strategy": draw(st.sampled_from(CHECKPOINT_STRATEGIES)),
        }
    return spec


@SETTINGS
@given(valid_specs())
def test_it_accepts_generated_valid_specs(spec: dict[str, Any]) -> None:
    assert validate_spec(spec, CATALOG) == []
    defaulted = default_spec(spec)
    assert validate_spec(defaulted, CATALOG) == []
    assert unknown_fields({"spec": defaulted}) == []
    assert isinstance(spec_warnings(defaulted, CATALOG), list)


@SETTINGS
@given(valid_specs())
def test_it_defaults_idempotently_without_overriding(spec: dict[str, Any]) -> None:
    once = default_spec(spec)
    assert default_spec(once) == once
    for path in _paths(spec):  # every value that was set is still there, unchanged
        if not isinstance(_at(spec, path), dict | list):
            assert _at(once, path) == _at(spec, path)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=10) | st.integers(0, 9), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


BASE_SPEC = base()["spec"]
SPEC_PATHS = _paths(BASE_SPEC)


def _mutate(spec: Any, path: tuple[Any, ...], action: str, value: Any) -> Any:
    if not path:
        return value
    parent = spec
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "insert" and isinstance(parent[last], dict):
        parent[last]["x-" + str(len(parent[last]))] = value
    else:
        parent[last] = value
    return spec


def _check_never_raises(spec: Any) -> None:
    errors = validate_spec(spec, CATALOG)
    assert isinstance(errors, list)
    for error in errors:
        assert isinstance(error, FieldError)
        assert error.field.startswith("spec")
        assert error.reason in REASONS
        assert error.message
    assert all(isinstance(w, str) for w in spec_warnings(spec, CATALOG))
    defaulted = default_spec(spec)
    assert default_spec(defaulted) == defaulted
    runtime = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "x"},
        "spec": spec,
    }
    assert isinstance(unknown_fields(runtime), list)
    prune_unknown(copy.deepcopy(runtime))


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(SPEC_PATHS), st.sampled_from(["replace", "delete", "insert"]), _json
        ),
        min_size=1,
        max_size=4,
    )
)
def test_it_never_raises_on_mutated_specs(
    mutations: list[tuple[tuple[Any, ...], str, Any]],
) -> None:
    spec: Any = copy.deepcopy(BASE_SPEC)
    for path, action, value in mutations:
        try:
            spec = _mutate(spec, path, action, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this path
    _check_never_raises(spec)


@SETTINGS
@given(_json)
def test_it_never_raises_on_arbitrary_json(value: Any) -> None:
    _check_never_raises(value)
    assert isinstance(validate_status(value), list)
    assert isinstance(validate_runtime({"metadata": value, "spec": value}, CATALOG), list)


@SETTINGS
@given(
    st.dictionaries(
        st.sampled_from(
            ["type", "properties", "required", "items", "$ref", "pattern", "enum", "minimum"]
        ),
        _json,
        max_size=5,
    )
)
def test_it_never_raises_on_odd_parameter_schemas(parameters: dict[str, Any]) -> None:
    spec = copy.deepcopy(BASE_SPEC)
    spec["parameters"] = parameters
    _check_never_raises(spec)


_META_KEYS = ["name", "generateName", "namespace", "labels", "annotations", "finalizers"]


@SETTINGS
@given(st.dictionaries(st.sampled_from(_META_KEYS), _json, max_size=6), _json)
def test_it_never_raises_on_odd_metadata_or_status(metadata: dict[str, Any], value: Any) -> None:
    runtime = {"metadata": metadata, "spec": copy.deepcopy(BASE_SPEC)}
    for error in validate_runtime(runtime, CATALOG):
        assert error.field.startswith("metadata")
        assert error.reason in REASONS
    status = {"phase": value, "conditions": [{"type": value, "reason": value}, value]}
    assert all(e.field.startswith("status") for e in validate_status(status))
