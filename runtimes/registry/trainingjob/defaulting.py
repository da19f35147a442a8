"""Defaulting for a TrainingJob spec: where the runtime is, and how many nodes.

``runtimeRef.namespace`` defaults to the job's project. Nodes above 1, wherever they are said
(the job's ``resources.nodes`` shorthand, or the nodes of the preset or defaults the job runs
on), are stored as ``spec.distributed.nodes``, so a reader finds them in one place. A default
never overrides a value the job sets, and values of the wrong type are left for validation.
Idempotent.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from runtimes.catalog.compile import chosen_preset
from runtimes.catalog.presets import preset_resources


def default_spec(
    spec: dict[str, Any], namespace: str, runtime: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A defaulted copy of `spec`; `runtime` is the referenced runtime when it exists."""
    result = copy.deepcopy(spec)
    ref = result.get("runtimeRef")
    if isinstance(ref, dict) and not ref.get("namespace"):
        ref["namespace"] = namespace
    _move_nodes(result)
    distributed = result.get("distributed")
    if runtime is not None and not (isinstance(distributed, dict) and "nodes" in distributed):
        runtime_spec = runtime.get("spec") or {}
        floors = preset_resources(runtime_spec, chosen_preset(runtime_spec, result))
        nodes = floors.get("nodes")
        if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 1:
            result["distributed"] = {**(distributed or {}), "nodes": nodes}
    return result


def _move_nodes(spec: dict[str, Any]) -> None:
    """``resources.nodes`` is shorthand for ``distributed.nodes``: stored in the long form."""
    resources = spec.get("resources")
    if not isinstance(resources, dict) or resources.get("nodes") is None:
        return
    distributed = spec.get("distributed")
    if distributed is None:
        distributed = spec["distributed"] = {}
    if not isinstance(distributed, dict):
        return
    nodes = resources["nodes"]
    if distributed.get("nodes") is None:
        distributed["nodes"] = nodes
    elif distributed["nodes"] != nodes:
        return  # both said, differently: validation names it
    del resources["nodes"]
    if not resources:
        del spec["resources"]
