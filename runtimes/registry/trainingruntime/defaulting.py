"""Defaulting for a TrainingRuntime spec, driven by the defaults the schema declares.

A default fills a field that is unset (absent or null) and never overrides a value. The objects
that hold defaulted fields (``requires``, ``checkpointing``) are created so that the stored
object shows every default; a GPU request gets ``interconnect: Any`` wherever one appears.
Values of the wrong type are left alone for validation to report. Idempotent.
"""

from __future__ import annotations

import copy
from typing import Any

from runtimes.registry.trainingruntime.schema import SPEC, Field

# Objects created when absent so their defaults become visible, as the contract asks.
_CREATE_WHEN_ABSENT = frozenset({"spec.requires", "spec.checkpointing"})


def default_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Returns a defaulted copy of `spec`; the argument is not changed."""
    if not isinstance(spec, dict):
        return spec
    result = copy.deepcopy(spec)
    _apply(result, SPEC, "spec")
    return result


def _apply(value: dict[str, Any], node: Field, path: str) -> None:
    if node.preserve_unknown:
        return
    for key, child in node.properties.items():
        child_path = f"{path}.{key}"
        current = value.get(key)
        if current is None:
            if child.default is not None:
                value[key] = copy.deepcopy(child.default)
            elif child.type == "object" and child_path in _CREATE_WHEN_ABSENT:
                value[key] = {}
                _apply(value[key], child, child_path)
            continue
        if child.type == "object" and isinstance(current, dict):
            _apply(current, child, child_path)
        elif isinstance(current, list) and child.items is not None and child.items.type == "object":
            for item in current:
                if isinstance(item, dict):
                    _apply(item, child.items, f"{child_path}[]")
