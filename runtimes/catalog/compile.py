"""Compiling a TrainingJob draft against a TrainingRuntime: what would run, where, how long.

A draft is a TrainingJob's spec (``mode``, ``model``, ``method``, ``quantization``,
``parameters``, ``steps`` or ``tasks``, ``accelerator``, ``data``, ``teacher``, ``environment``,
``resources``, ``distributed``, ``sidecars``, ``initCommand``). Compiling picks the preset,
merges the runtime's default parameters under the draft's (`merge.merge_parameters`) and
validates them against the runtime's schema, checks the required inputs and the job's own rules
(`job_rules`), and lists every matching offering with its effective resources, expected
duration and cost. Problems come back as `FieldError`s whose paths point into the draft
(``parameters.learningRate``, ``model``); a TrainingJob's admission prefixes them with ``spec.``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonpointer import escape

from runtimes.apimachinery import fielderrors
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.catalog import job_rules
from runtimes.catalog.accelerators import AcceleratorCatalog, Offering
from runtimes.catalog.estimates import cost_of, seconds_for
from runtimes.catalog.matching import Match, effective_resources, match_gpu
from runtimes.catalog.merge import merge_parameters
from runtimes.catalog.parameters import parameter_errors
from runtimes.catalog.presets import preset_resources

REQUIREMENTS = ("data", "model", "teacher", "environment")


@dataclass(frozen=True)
class Requirement:
    name: str  # also the draft field it asks for
    required: bool
    given: bool

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "required": self.required, "given": self.given}


@dataclass(frozen=True)
class OfferingPlan:
    """One place the job could run: the offering, why it matched, and what it would take."""

    match: Match
    offering: Offering
    resources: dict[str, Any]  # effective: floors raised to the host shape
    nodes: int
    seconds: float | None  # None when the runtime never measured this accelerator class
    cost: float | None

    def as_dict(self) -> dict[str, Any]:
        variant = self.match.variant
        return {
            "accelerator": variant.id,
            "family": variant.family,
            "acceleratorClass": variant.accelerator_class,
            "count": self.offering.count,
            "nodes": self.nodes,
            "pricePerHour": self.offering.price_per_hour,
            "reasons": [r.as_dict() for r in self.match.reasons],
            "resources": self.resources,
            "seconds": self.seconds,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class CompileResult:
    runtime: dict[str, str]  # name and namespace of the runtime compiled against
    preset: dict[str, Any] | None
    parameters: dict[str, Any]
    provenance: dict[str, str]  # JSON pointer into parameters -> "default" | "job"
    requirements: tuple[Requirement, ...]
    resources: dict[str, Any]  # the floors: each field of the preset's over the defaults'
    work: dict[str, int]  # {"steps": n}, {"tasks": n} or {}
    offerings: tuple[OfferingPlan, ...]  # fastest first; unmeasured ones last
    warnings: tuple[str, ...]
    mode: str = "Train"
    nodes: int = 1
    sidecars: tuple[dict[str, Any], ...] = ()  # the runtime's and the job's, images filled in
    init_command: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "nodes": self.nodes,
            "sidecars": list(self.sidecars),
            "initCommand": self.init_command,
            "runtime": self.runtime,
            "preset": self.preset,
            "parameters": self.parameters,
            "provenance": self.provenance,
            "requirements": [r.as_dict() for r in self.requirements],
            "resources": self.resources,
            "work": self.work,
            "offerings": [o.as_dict() for o in self.offerings],
            "warnings": list(self.warnings),
        }


def compile_job(
    runtime: Mapping[str, Any], draft: Mapping[str, Any], catalog: AcceleratorCatalog
) -> CompileResult | list[FieldError]:
    """Compiles ``draft`` against ``runtime`` (a full object); errors point into the draft."""
    spec: Mapping[str, Any] = runtime.get("spec") or {}
    defaults: Mapping[str, Any] = spec.get("defaults") or {}
    errors: list[FieldError] = []

    requirements = _requirements(spec, draft)
    errors += [fielderrors.required(r.name) for r in requirements if r.required and not r.given]
    errors += job_rules.environment_errors(spec, draft)
    preset = _preset(spec, draft, errors)

    job_parameters = draft.get("parameters") or {}
    if not isinstance(job_parameters, Mapping):
        errors.append(fielderrors.invalid("parameters", job_parameters, "must be an object"))
        job_parameters = {}
    schema = spec.get("parameters") or {}
    merged = merge_parameters(schema, defaults.get("parameters") or {}, job_parameters)
    errors += parameter_errors(schema, merged, "parameters")

    mode, work = _work(spec, draft, errors)
    resources = job_rules.raise_floors(
        preset_resources(spec, preset), draft.get("resources"), errors
    )
    nodes = job_rules.nodes_for(spec, draft, resources, errors)
    if nodes != 1 or "nodes" in resources:
        resources["nodes"] = nodes
    sidecars = job_rules.job_sidecars(spec, draft, errors)
    init_command = job_rules.init_command(defaults, draft, errors)
    matches = _narrow(match_gpu(resources.get("gpu"), catalog), draft, resources, catalog, errors)
    if errors:
        return list(dict.fromkeys(errors))

    warnings: list[str] = []
    if resources.get("gpu") and not matches:
        warnings.append("no offering in the accelerator catalog satisfies the GPU request")
    plans = _plans(spec, job_parameters, work, resources, matches, catalog)
    if work and any(p.seconds is None for p in plans):
        unmeasured = sorted({p.match.variant.accelerator_class for p in plans if p.seconds is None})
        warnings.append(f"no measured {_unit(work)} time for {', '.join(unmeasured)}")
    metadata = runtime.get("metadata") or {}
    return CompileResult(
        runtime={"name": metadata.get("name", ""), "namespace": metadata.get("namespace", "")},
        preset=copy.deepcopy(dict(preset)) if preset else None,
        parameters=merged,
        provenance=provenance(merged, job_parameters),
        requirements=requirements,
        resources=resources,
        work=work,
        offerings=tuple(plans),
        warnings=tuple(warnings),
        mode=mode,
        nodes=nodes,
        sidecars=tuple(sidecars),
        init_command=init_command,
    )


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` over ``base`` as a JSON merge patch without a schema: objects merge key by
    key, null removes, anything else is replaced (`merge.merge_parameters` with no schema)."""
    return merge_parameters({}, base, override)


def provenance(
    merged: Mapping[str, Any], job: Mapping[str, Any], prefix: str = ""
) -> dict[str, str]:
    """Where each leaf of the merged parameters came from, keyed by JSON pointer.

    Arrays are leaves, because a job's array replaces the default's whole.
    """
    origins: dict[str, str] = {}
    for key, value in merged.items():
        pointer = f"{prefix}/{escape(key)}"
        in_job = isinstance(job, Mapping) and key in job
        if isinstance(value, Mapping) and value:
            origins |= provenance(value, job.get(key, {}) if in_job else {}, pointer)
        else:
            origins[pointer] = "job" if in_job else "default"
    return origins


def _given(value: Any) -> bool:
    return value not in (None, "", {}, [])


def _requirements(spec: Mapping[str, Any], draft: Mapping[str, Any]) -> tuple[Requirement, ...]:
    requires = spec.get("requires") or {}
    return tuple(
        Requirement(
            name=name,
            required=bool(requires.get(name, name == "model")),
            given=_given(draft.get(name)),
        )
        for name in REQUIREMENTS
    )


def chosen_preset(spec: Mapping[str, Any], draft: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The preset a draft runs on, or None (no presets, or the draft names none of them)."""
    return _preset(spec, draft, [])


def _preset(
    spec: Mapping[str, Any], draft: Mapping[str, Any], errors: list[FieldError]
) -> Mapping[str, Any] | None:
    """The preset measured for exactly the draft's model, method and quantization."""
    presets = spec.get("presets") or []
    model, method = draft.get("model"), draft.get("method")
    quantization = draft.get("quantization") or ""
    if not presets or not _given(model):
        return None  # a missing required model is reported with the requirements
    for_model = [p for p in presets if p.get("model") == model]
    if not for_model:
        errors.append(fielderrors.not_supported("model", model, _unique(presets, "model")))
        return None
    if not _given(method):
        methods = ", ".join(_unique(for_model, "method"))
        errors.append(fielderrors.required("method", f"this runtime has {methods} for {model}"))
        return None
    for_method = [p for p in for_model if p.get("method") == method]
    if not for_method:
        errors.append(fielderrors.not_supported("method", method, _unique(for_model, "method")))
        return None
    for preset in for_method:
        if (preset.get("quantization") or "") == quantization:
            return preset
    schemes = [p.get("quantization") or "" for p in for_method]
    errors.append(fielderrors.not_supported("quantization", quantization, schemes))
    return None


def _unique(presets: list[Mapping[str, Any]], key: str) -> list[str]:
    return list(dict.fromkeys(str(p.get(key)) for p in presets))


def _work(
    spec: Mapping[str, Any], draft: Mapping[str, Any], errors: list[FieldError]
) -> tuple[str, dict[str, int]]:
    """The mode and ``{"steps": n}`` (training) or ``{"tasks": n}`` (evaluation), as the
    runtime's modes allow; the mode follows the work when the draft names none."""
    modes = spec.get("modes") or ["Train"]
    mode = draft.get("mode")
    if mode is not None and mode not in modes:
        errors.append(fielderrors.not_supported("mode", mode, list(modes)))
        mode = None
    given = [k for k in ("steps", "tasks") if draft.get(k) is not None]
    if len(given) == 2:
        errors.append(fielderrors.forbidden("tasks", "set steps (training) or tasks, not both"))
        return mode or modes[0], {}
    if not given:
        return mode or ("Train" if "Train" in modes else modes[0]), {}
    key = given[0]
    value = draft[key]
    implied = "Train" if key == "steps" else "Evaluate"
    if mode is not None and mode != implied:
        wanted = "steps" if mode == "Train" else "tasks"
        errors.append(fielderrors.forbidden(key, f"mode {mode} counts its work in {wanted}"))
    elif key == "steps" and "Train" not in modes:
        errors.append(fielderrors.forbidden("steps", "this runtime only evaluates: set tasks"))
    elif key == "tasks" and "Evaluate" not in modes:
        errors.append(fielderrors.forbidden("tasks", "this runtime does not evaluate: set steps"))
    elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
        errors.append(fielderrors.invalid(key, value, "must be a positive integer"))
    else:
        return implied, {key: value}
    return mode or implied, {}


def _narrow(
    matches: list[Match],
    draft: Mapping[str, Any],
    resources: Mapping[str, Any],
    catalog: AcceleratorCatalog,
    errors: list[FieldError],
) -> list[Match]:
    """Keeps the matches the draft's ``accelerator`` (a variant id or a family) names."""
    wanted = draft.get("accelerator")
    if not _given(wanted):
        return matches
    if not isinstance(wanted, str) or not catalog.knows(wanted):
        errors.append(
            fielderrors.not_supported("accelerator", wanted, [*catalog.families, *catalog.ids])
        )
        return []
    if not resources.get("gpu"):
        errors.append(fielderrors.invalid("accelerator", wanted, "this runtime runs without GPUs"))
        return []
    kept = [m for m in matches if wanted in (m.variant.id, m.variant.family)]
    if not kept:
        choices = ", ".join(m.variant.id for m in matches) or "none in the catalog"
        errors.append(
            fielderrors.invalid(
                "accelerator",
                wanted,
                f"does not satisfy the runtime's GPU request; choose {choices}",
            )
        )
    return kept


def _plans(
    spec: Mapping[str, Any],
    job_parameters: Mapping[str, Any],
    work: dict[str, int],
    resources: Mapping[str, Any],
    matches: list[Match],
    catalog: AcceleratorCatalog,
) -> list[OfferingPlan]:
    nodes = int(resources.get("nodes") or 1)
    plans = []
    for match in matches:
        for offering in match.offerings:
            seconds = None
            if work:
                cls = match.variant.accelerator_class
                aliases = catalog.class_keys(cls)[1:]
                seconds = seconds_for(spec, job_parameters, work, cls, aliases)
            plans.append(
                OfferingPlan(
                    match=match,
                    offering=offering,
                    resources=effective_resources(resources, offering),
                    nodes=nodes,
                    seconds=seconds,
                    cost=None if seconds is None else cost_of(seconds, offering, nodes),
                )
            )
    # Without work to time, keep the request's preference order (sorted() is stable).
    return sorted(
        plans,
        key=lambda p: (
            (p.seconds is None, p.seconds or 0.0, p.cost or 0.0) if work else (0, 0.0, 0.0)
        ),
    )


def _unit(work: Mapping[str, int]) -> str:
    return "step" if "steps" in work else "task"
