"""Merging a runtime's default parameters under a job's: JSON merge-patch, aware of alternatives.

The job's parameters are a JSON merge patch (RFC 7396) over the runtime's
``defaults.parameters``: objects merge key by key, ``null`` removes the default's key, anything
else replaces. One exception keeps the merge predictable where a schema offers alternatives:
when the parameter schema at a path is a ``oneOf`` or ``anyOf`` (after following local
``$ref``s), or both objects name a different discriminator (a property that the branches pin
with ``const``, or ``name``), the job's object replaces the default's whole. Without it, choosing
``optimizer: {name: adamw-8bit}`` kept the default adamw's ``epsilon`` and the result matched no
branch.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jsonpointer import unescape

# Bounded: the merge walks the job's value, whose depth the body bounds already limit; following
# ``$ref``s stops after `MAX_REF_HOPS` per node, so a schema's reference chain cannot loop.

MAX_REF_HOPS = 32
# The property that names a branch when the schema says nothing more precise.
DEFAULT_DISCRIMINATOR = "name"

Schema = Mapping[str, Any]


def merge_parameters(
    schema: Any, defaults: Mapping[str, Any], job: Mapping[str, Any]
) -> dict[str, Any]:
    """``job`` merged over ``defaults`` as described above; neither argument is changed."""
    root = schema if isinstance(schema, Mapping) else {}
    return _merge(dict(defaults), job, _resolve(root, root), root)


def _merge(base: Mapping[str, Any], patch: Mapping[str, Any], node: Schema, root: Schema) -> Any:
    merged = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
            continue
        child = _property(node, key, root)
        current = merged.get(key)
        if (
            isinstance(value, Mapping)
            and isinstance(current, Mapping)
            and not _replaces(child, current, value, root)
        ):
            merged[key] = _merge(current, value, child, root)
        else:
            merged[key] = _without_nulls(value)
    return merged


def _without_nulls(value: Any) -> Any:
    """A merge patch's nulls inside a new object mean "absent" (RFC 7396's MergePatch)."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return copy.deepcopy(value)


def _replaces(
    node: Schema, current: Mapping[str, Any], value: Mapping[str, Any], root: Schema
) -> bool:
    """Whether the job's object replaces the default's instead of merging into it."""
    if any(isinstance(node.get(k), list) for k in ("oneOf", "anyOf")):
        return True
    for key in _discriminators(node, root):
        if key in current and key in value and current[key] != value[key]:
            return True
    return False


def _discriminators(node: Schema, root: Schema) -> list[str]:
    keys = [DEFAULT_DISCRIMINATOR]
    for branch in node.get("allOf") or []:
        resolved = _resolve(branch, root)
        for name, prop in (resolved.get("properties") or {}).items():
            if isinstance(prop, Mapping) and "const" in prop:
                keys.append(name)
    return keys


def _property(node: Schema, key: str, root: Schema) -> Schema:
    """The schema of property ``key`` of an object described by ``node`` ({} when unknown)."""
    candidates = [node, *(_resolve(b, root) for b in node.get("allOf") or [])]
    for candidate in candidates:
        props = candidate.get("properties")
        if isinstance(props, Mapping) and key in props:
            return _resolve(props[key], root)
    for candidate in candidates:
        extra = candidate.get("additionalProperties")
        if isinstance(extra, Mapping):
            return _resolve(extra, root)
    return {}


def _resolve(schema: Any, root: Schema) -> Schema:
    """``schema`` with local ``$ref``s followed (``#/...`` pointers only), at most
    `MAX_REF_HOPS` of them; siblings of a ``$ref`` stay (2020-12 applies both)."""
    if not isinstance(schema, Mapping):
        return {}
    hops = 0
    result: dict[str, Any] = dict(schema)
    while isinstance(result.get("$ref"), str) and hops < MAX_REF_HOPS:
        target = _pointer(root, result.pop("$ref"))
        if target is None:
            break
        result = {**target, **result}
        hops += 1
    return result


def _pointer(root: Schema, ref: str) -> Schema | None:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        key = unescape(part)
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdecimal() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node if isinstance(node, Mapping) else None
