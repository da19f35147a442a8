"""Validation of a TrainingRuntime: every rule of the contract, all problems at once.

`validate_spec` runs the structural checks generated from the schema, then the rules that need more
than one field or the accelerator catalog. Each rule only looks at values that are structurally
sound, so one mistake is reported once, at its own path. `validate_status` serves the status
subresource; `spec_warnings` (soft problems) lives in
``runtimes.registry.trainingruntime.warnings``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from runtimes.apimachinery import fielderrors as fe
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.metadata_rules import validate_object_meta
from runtimes.apimachinery.quantities import format_seconds, parse_duration
from runtimes.apimachinery.structural import structural_errors
from runtimes.catalog.gpu_rules import AcceleratorCatalog, gpu_requests, gpu_type_errors
from runtimes.registry.trainingruntime.parameter_schema import parameters_errors
from runtimes.registry.trainingruntime.schema import (
    GANG_LAUNCHERS,
    LAUNCHERS,
    SPEC,
    STATUS,
    prune_unknown,
    unknown_fields,
)
from runtimes.registry.trainingruntime.warnings import spec_warnings

__all__ = [
    "AcceleratorCatalog",
    "prune_unknown",
    "spec_warnings",
    "unknown_fields",
    "validate_runtime",
    "validate_spec",
    "validate_status",
]

INIT_COMMAND_MAX_SECONDS = 30 * 60


def validate_spec(spec: Any, catalog: AcceleratorCatalog) -> list[FieldError]:
    """Every problem with a TrainingRuntime spec, each with its field path and cause."""
    if spec is None:
        return [fe.required("spec")]
    errors = structural_errors(spec, SPEC, "spec")
    if not isinstance(spec, dict):
        return errors
    for rule in (
        _argv_errors,
        _multi_node_errors,
        _init_command_errors,
        _env_errors,
        _preset_errors,
        parameters_errors,
    ):
        errors.extend(rule(spec))
    for path, gpu in gpu_requests(spec):
        errors.extend(gpu_type_errors(gpu, path, catalog))
    errors.extend(_estimate_errors(spec, catalog))
    return list(dict.fromkeys(errors))


def validate_status(status: Any) -> list[FieldError]:
    """Structural rules for the status subresource (phase, metav1.Conditions, generations)."""
    if status is None:
        return []
    return structural_errors(status, STATUS, "status")


def validate_runtime(obj: Any, catalog: AcceleratorCatalog) -> list[FieldError]:
    """Metadata and spec of a whole TrainingRuntime, as a create or update checks them."""
    if not isinstance(obj, dict):
        return [fe.invalid("", "object", "a TrainingRuntime must be a JSON object")]
    return validate_object_meta(obj.get("metadata")) + validate_spec(obj.get("spec"), catalog)


def _dict(value: Any, key: str) -> dict[str, Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def _list(value: Any, key: str) -> list[Any]:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, list) else []


def _sidecars(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for index, sidecar in enumerate(_list(_dict(spec, "defaults"), "sidecars")):
        if isinstance(sidecar, dict):
            yield f"spec.defaults.sidecars[{index}]", sidecar


def _resources(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    defaults = _dict(spec, "defaults")
    if isinstance(defaults.get("resources"), dict):
        yield "spec.defaults.resources", defaults["resources"]
    for index, preset in enumerate(_list(spec, "presets")):
        if isinstance(_dict(preset, "resources"), dict) and _dict(preset, "resources"):
            yield f"spec.presets[{index}].resources", preset["resources"]


def _argv_errors(spec: dict[str, Any]) -> list[FieldError]:
    """The first argument of every argv is the program: it may not be empty (ours)."""
    argvs = [("spec.command", spec.get("command"))]
    argvs.append(
        (
            "spec.defaults.initCommand.command",
            _dict(_dict(spec, "defaults"), "initCommand").get("command"),
        )
    )
    argvs.extend((f"{path}.command", sidecar.get("command")) for path, sidecar in _sidecars(spec))
    return [
        fe.invalid(f"{path}[0]", "", "the program to run may not be empty")
        for path, argv in argvs
        if isinstance(argv, list) and argv and argv[0] == ""
    ]


def _multi_node_errors(spec: dict[str, Any]) -> list[FieldError]:
    """nodes above 1 needs a gang launcher (ours)."""
    launcher = spec.get("launcher") or "Plain"
    if launcher not in LAUNCHERS or launcher in GANG_LAUNCHERS:
        return []
    detail = (
        f"a multi-node run needs a gang launcher: set spec.launcher to "
        f"{', '.join(GANG_LAUNCHERS[:-1])} or {GANG_LAUNCHERS[-1]} (it is {launcher}), "
        "or nodes to 1"
    )
    return [
        fe.invalid(f"{path}.nodes", nodes, detail)
        for path, resources in _resources(spec)
        if isinstance(nodes := resources.get("nodes"), int)
        and not isinstance(nodes, bool)
        and nodes > 1
    ]


def _init_command_errors(spec: dict[str, Any]) -> list[FieldError]:
    timeout = _dict(_dict(spec, "defaults"), "initCommand").get("timeout")
    if not isinstance(timeout, str):
        return []
    try:
        seconds = parse_duration(timeout)
    except ValueError:
        return []  # the structural check reported the format
    if seconds <= INIT_COMMAND_MAX_SECONDS:
        return []
    limit = format_seconds(INIT_COMMAND_MAX_SECONDS)
    return [fe.invalid("spec.defaults.initCommand.timeout", timeout, f"must be at most {limit}")]


def _env_errors(spec: dict[str, Any]) -> list[FieldError]:
    """Each env var has exactly one of value or valueFrom (ours)."""
    errors: list[FieldError] = []
    for path, sidecar in _sidecars(spec):
        for index, env in enumerate(_list(sidecar, "env")):
            if not isinstance(env, dict):
                continue
            env_path = f"{path}.env[{index}]"
            has_value, has_source = env.get("value") is not None, env.get("valueFrom") is not None
            if has_value and has_source:
                errors.append(
                    fe.forbidden(
                        f"{env_path}.valueFrom",
                        "may not be set together with value; set exactly one of the two",
                    )
                )
            elif not has_value and not has_source:
                errors.append(
                    fe.required(
                        f"{env_path}.value",
                        "set exactly one of value (a literal) or valueFrom.secretKeyRef",
                    )
                )
    return errors


def _preset_errors(spec: dict[str, Any]) -> list[FieldError]:
    """QLoRA needs a quantization; (model, method, quantization) is unique (ours)."""
    errors: list[FieldError] = []
    seen: set[tuple[str, str, str]] = set()
    for index, preset in enumerate(_list(spec, "presets")):
        if not isinstance(preset, dict):
            continue
        model, method = preset.get("model"), preset.get("method")
        quantization = preset.get("quantization") or ""
        if method == "QLoRA" and quantization == "":
            errors.append(
                fe.required(
                    f"spec.presets[{index}].quantization",
                    "QLoRA trains on a quantized base model: name the scheme, e.g. nf4",
                )
            )
        if not (
            isinstance(model, str) and isinstance(method, str) and isinstance(quantization, str)
        ):
            continue
        triple = (model, method, quantization)
        if triple in seen:
            errors.append(
                fe.duplicate(
                    f"spec.presets[{index}]",
                    {"model": model, "method": method, "quantization": quantization},
                )
            )
        seen.add(triple)
    return errors


def _estimate_errors(spec: dict[str, Any], catalog: AcceleratorCatalog) -> list[FieldError]:
    """Estimate keys are accelerator classes from the catalog (or an earlier name of one)."""
    classes = sorted(catalog.classes)
    estimate = _dict(spec, "estimate")
    return [
        fe.not_supported(f"spec.estimate.{name}[{key}]", key, classes)
        for name in ("secondsPerStep", "secondsPerTask")
        for key in _dict(estimate, name)
        if key not in catalog.classes and key not in getattr(catalog, "class_aliases", {})
    ]
