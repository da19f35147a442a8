"""The rules a job's own fields follow when it is compiled against a runtime.

A job may raise the runtime's floors (never lower them), spread over more nodes when the
runtime's launcher can gang-launch, add or replace sidecars (whose image defaults to the job's,
that is the runtime's image) and replace the preflight. An environment needs a runtime whose
``environmentTasks`` is ``AttemptAPI``. Each function returns the effective value and appends
`FieldError`s whose paths point into the draft (``resources.cpu``, ``distributed.nodes``).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from runtimes.apimachinery import fielderrors
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.formats import ENV_NAME_PATTERN
from runtimes.apimachinery.quantities import format_seconds, parse_duration, parse_quantity

INIT_COMMAND_MAX_SECONDS = 30 * 60
GANG_LAUNCHERS = ("Torchrun", "Accelerate", "Deepspeed")
ATTEMPT_API = "AttemptAPI"
_ENV_NAME = re.compile(ENV_NAME_PATTERN)


def environment_errors(spec: Mapping[str, Any], draft: Mapping[str, Any]) -> list[FieldError]:
    """An environment runs its tasks through the live attempt, which only AttemptAPI images do."""
    environment = draft.get("environment")
    if environment in (None, "") or spec.get("environmentTasks") == ATTEMPT_API:
        return []
    error = fielderrors.forbidden(
        "environment",
        "this runtime's image cannot run environment tasks on a GPU host: its environmentTasks "
        "is empty, and only an image that fetches manifests through the live attempt "
        "(environmentTasks: AttemptAPI) can",
    )
    fix = "Remove spec.environment, or choose a runtime whose environmentTasks is AttemptAPI."
    return [dataclasses.replace(error, fix=fix)]


def raise_floors(floors: dict[str, Any], job: Any, errors: list[FieldError]) -> dict[str, Any]:
    """The runtime's floors with the job's ``resources`` over them; a lower value is refused."""
    resources = copy.deepcopy(floors)
    if not isinstance(job, Mapping):
        return resources
    for key in ("cpu", "memory", "disk"):
        if job.get(key) is not None:
            _raise(resources, key, job[key], f"resources.{key}", errors)
    gpu = job.get("gpu")
    if isinstance(gpu, Mapping) and gpu:
        if not isinstance(resources.get("gpu"), Mapping):
            errors.append(
                fielderrors.invalid("resources.gpu", gpu, "this runtime runs without GPUs")
            )
            return resources
        resources["gpu"] = dict(resources["gpu"])
        count = gpu.get("count")
        if count is not None:
            floor = resources["gpu"].get("count") or 1
            if isinstance(count, int) and not isinstance(count, bool) and count >= floor:
                resources["gpu"]["count"] = count
            else:
                errors.append(
                    fielderrors.invalid(
                        "resources.gpu.count", count, f"may only raise the runtime's {floor}"
                    )
                )
        if gpu.get("minMemory") is not None:
            _raise(
                resources["gpu"], "minMemory", gpu["minMemory"], "resources.gpu.minMemory", errors
            )
    return resources


def _raise(
    resources: dict[str, Any], key: str, value: Any, path: str, errors: list[FieldError]
) -> None:
    wanted = _quantity(value)
    if wanted is None:
        errors.append(fielderrors.invalid(path, value, "must be a Kubernetes quantity"))
        return
    floor = _quantity(resources.get(key))
    if floor is not None and wanted < floor:
        detail = f"may only raise the runtime's floor of {resources[key]}"
        errors.append(fielderrors.invalid(path, value, detail))
        return
    resources[key] = value


def _quantity(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def nodes_for(
    spec: Mapping[str, Any],
    draft: Mapping[str, Any],
    resources: Mapping[str, Any],
    errors: list[FieldError],
) -> int:
    """How many nodes run the job: ``distributed.nodes`` (or its shorthand ``resources.nodes``),
    at least the preset's; above 1 needs a gang launcher."""
    floor = resources.get("nodes")
    floor = floor if isinstance(floor, int) and not isinstance(floor, bool) and floor > 0 else 1
    distributed = draft.get("distributed")
    given: list[tuple[str, Any]] = []
    if isinstance(distributed, Mapping) and distributed.get("nodes") is not None:
        given.append(("distributed.nodes", distributed["nodes"]))
    job_resources = draft.get("resources")
    if isinstance(job_resources, Mapping) and job_resources.get("nodes") is not None:
        given.append(("resources.nodes", job_resources["nodes"]))
    if len(given) == 2 and given[0][1] != given[1][1]:
        errors.append(
            fielderrors.invalid(
                "resources.nodes",
                given[1][1],
                "is shorthand for distributed.nodes, which says "
                f"{fielderrors.render_value(given[0][1])}: set one of the two",
            )
        )
        return floor
    if not given:
        path, nodes = "distributed.nodes", floor
    else:
        path, nodes = given[0]
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            errors.append(fielderrors.invalid(path, nodes, "must be a positive integer"))
            return floor
        if nodes < floor:
            detail = f"may only raise the preset's {floor} nodes"
            errors.append(fielderrors.invalid(path, nodes, detail))
            return floor
    launcher = spec.get("launcher") or "Plain"
    # A preset's own nodes are the runtime's business (its admission checks the launcher).
    if given and nodes > 1 and launcher not in GANG_LAUNCHERS:
        detail = (
            f"a multi-node run needs a gang launcher and this runtime's is {launcher}; "
            "set nodes to 1 or choose a runtime launched by Torchrun, Accelerate or Deepspeed"
        )
        errors.append(fielderrors.invalid(path, nodes, detail))
    return nodes


def job_sidecars(
    spec: Mapping[str, Any], draft: Mapping[str, Any], errors: list[FieldError]
) -> list[dict[str, Any]]:
    """The runtime's default sidecars with the job's over them by name, each with an image."""
    defaults = (spec.get("defaults") or {}).get("sidecars") or []
    by_name: dict[str, dict[str, Any]] = {}
    for sidecar in defaults:
        if isinstance(sidecar, Mapping) and isinstance(sidecar.get("name"), str):
            by_name[sidecar["name"]] = copy.deepcopy(dict(sidecar))
    own = draft.get("sidecars")
    seen: set[str] = set()
    for index, sidecar in enumerate(own if isinstance(own, list) else []):
        if not isinstance(sidecar, Mapping) or not isinstance(sidecar.get("name"), str):
            errors.append(fielderrors.required(f"sidecars[{index}].name", "name each sidecar"))
            continue
        name = sidecar["name"]
        if name in seen:
            errors.append(fielderrors.duplicate(f"sidecars[{index}].name", name))
            continue
        seen.add(name)
        errors.extend(_env_errors(sidecar, f"sidecars[{index}]"))
        by_name[name] = copy.deepcopy(dict(sidecar))
    image = spec.get("image")
    for sidecar in by_name.values():
        if not sidecar.get("image") and isinstance(image, str):
            sidecar["image"] = image
    return list(by_name.values())


def _env_errors(sidecar: Mapping[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    env = sidecar.get("env")
    for index, var in enumerate(env if isinstance(env, list) else []):
        at = f"{path}.env[{index}]"
        if not isinstance(var, Mapping):
            errors.append(fielderrors.invalid(at, var, "must be an object with a name"))
            continue
        name = var.get("name")
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            errors.append(fielderrors.invalid(f"{at}.name", name, f"must match {ENV_NAME_PATTERN}"))
        has_value, has_source = var.get("value") is not None, var.get("valueFrom") is not None
        if has_value == has_source:
            errors.append(
                fielderrors.invalid(
                    at, var, "set exactly one of value (a literal) or valueFrom.secretKeyRef"
                )
            )
    return errors


def init_command(
    defaults: Mapping[str, Any], draft: Mapping[str, Any], errors: list[FieldError]
) -> dict[str, Any] | None:
    """The job's preflight, else the runtime's; its timeout is at most 30m."""
    own = draft.get("initCommand")
    if not isinstance(own, Mapping):
        found = defaults.get("initCommand")
        return copy.deepcopy(dict(found)) if isinstance(found, Mapping) else None
    timeout = own.get("timeout")
    if timeout is not None:
        try:
            seconds = parse_duration(timeout) if isinstance(timeout, str) else None
        except ValueError:
            seconds = None
        if seconds is None:
            detail = "must be a duration such as 90s, 5m or 1h30m"
            errors.append(fielderrors.invalid("initCommand.timeout", timeout, detail))
        elif seconds > INIT_COMMAND_MAX_SECONDS:
            limit = format_seconds(INIT_COMMAND_MAX_SECONDS)
            errors.append(
                fielderrors.invalid("initCommand.timeout", timeout, f"must be at most {limit}")
            )
    return copy.deepcopy(dict(own))
