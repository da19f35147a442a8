"""The building blocks of the resource schema: `Field` nodes and walks over them.

A `Field` names a JSON type, a description and the constraints a schema can state. The walks
here (finding a node by path, listing and pruning unknown fields) work on any tree of them;
``runtimes.registry.trainingruntime.schema`` holds the TrainingRuntime tree itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtimes.apimachinery.fieldsets import ListKind, ListTypes


@dataclass(frozen=True)
class Field:
    """One node of the schema. ``type`` is a JSON type, or ``quantity`` (an int-or-string
    Kubernetes quantity), or ``map`` (an object whose keys are free and whose values are
    ``values``)."""

    type: str
    description: str = ""
    properties: Mapping[str, Field] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    items: Field | None = None
    values: Field | None = None
    enum: tuple[Any, ...] = ()
    default: Any = None
    format: str = ""
    min_length: int = 0
    max_length: int | None = None
    min_items: int = 0
    max_items: int | None = None
    minimum: int | float | None = None
    exclusive_minimum: bool = False
    # x-kubernetes-list-type: "atomic" (one value), "set" (unique scalars) or "map" (unique by
    # list_keys); server-side apply owns and merges a list by it. Every list declares one.
    list_type: str = ""
    list_keys: tuple[str, ...] = ()
    # x-kubernetes-map-type: "atomic" makes an object one value for server-side apply (kube's
    # +structType=atomic selectors); empty is granular, field by field.
    map_type: str = ""
    preserve_unknown: bool = False
    component: str = ""  # the OpenAPI component name when the node is shared or well known


def obj(
    description: str, component: str = "", required: tuple[str, ...] = (), **props: Field
) -> Field:
    return Field("object", description, properties=props, required=required, component=component)


def string(description: str, **constraints: Any) -> Field:
    return Field("string", description, **constraints)


def argv(description: str, **constraints: Any) -> Field:
    # An argv is one value: its order is its meaning, so server-side apply owns it whole.
    constraints.setdefault("list_type", "atomic")
    return Field("array", description, items=string("One argument."), **constraints)


def boolean(description: str, **constraints: Any) -> Field:
    return Field("boolean", description, **constraints)


def integer(description: str, **constraints: Any) -> Field:
    return Field("integer", description, **constraints)


def quantity(description: str) -> Field:
    return Field("quantity", description, format="quantity")


def child_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def unknown_fields(value: Any, node: Field, path: str = "") -> list[str]:
    """Paths the schema does not know, e.g. ``spec.foo`` or ``spec.presets[0].bar``.

    Free-form nodes (``spec.parameters``, ``spec.defaults.parameters``) are never searched.
    Call with ``(spec, SPEC, "spec")`` to check a spec alone.
    """
    found: list[str] = []
    if node.preserve_unknown:
        return found
    if node.type == "object" and isinstance(value, dict):
        for key, item in value.items():
            child = node.properties.get(key)
            if child is None:
                found.append(child_path(path, key))
            else:
                found.extend(unknown_fields(item, child, child_path(path, key)))
    elif node.type == "map" and isinstance(value, dict) and node.values is not None:
        for key, item in value.items():
            found.extend(unknown_fields(item, node.values, f"{path}[{key}]"))
    elif node.type == "array" and isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            found.extend(unknown_fields(item, node.items, f"{path}[{index}]"))
    return found


def prune_unknown(value: Any, node: Field) -> Any:
    """Drops, in place, every field `unknown_fields` would report; returns `value`."""
    if node.preserve_unknown:
        return value
    if node.type == "object" and isinstance(value, dict):
        for key in [k for k in value if k not in node.properties]:
            del value[key]
        for key, item in value.items():
            prune_unknown(item, node.properties[key])
    elif node.type == "map" and isinstance(value, dict) and node.values is not None:
        for item in value.values():
            prune_unknown(item, node.values)
    elif node.type == "array" and isinstance(value, list) and node.items is not None:
        for item in value:
            prune_unknown(item, node.items)
    return value


# go-openapi's swag.IsFloat64AJSONInteger: ECMAScript's safe integers, -(2^53-1) to 2^53-1.
MAX_JSON_INTEGER = 2**53 - 1


def is_whole_float(value: Any) -> bool:
    """A float that kube-openapi's type check takes for an integer (`swag.IsFloat64AJSONInteger`:
    a whole number within the safe range; NaN and infinities are never decoded)."""
    return isinstance(value, float) and value.is_integer() and abs(value) <= MAX_JSON_INTEGER


def whole_floats_as_integers(value: Any, node: Field) -> Any:
    """Turns, in place, every whole float under an integer (or int-or-string) field into an
    int; returns `value`. kube decodes ``2.0`` as a float64, its schema check accepts a whole
    one for an integer field, and Go's encoder writes it as ``2``: stored and read back, it is
    the integer. Walks the schema's nodes only, so free-form fields keep what was sent."""
    if node.preserve_unknown:
        return value
    if node.type == "object" and isinstance(value, dict):
        for key, child in node.properties.items():
            if key in value:
                value[key] = _whole_float_as_integer(value[key], child)
    elif node.type == "map" and isinstance(value, dict) and node.values is not None:
        for key, item in value.items():
            value[key] = _whole_float_as_integer(item, node.values)
    elif node.type == "array" and isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            value[index] = _whole_float_as_integer(item, node.items)
    return value


def _whole_float_as_integer(value: Any, node: Field) -> Any:
    if node.type in ("integer", "quantity"):
        return int(value) if is_whole_float(value) else value
    return whole_floats_as_integers(value, node)


_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def path_segments(path: str) -> list[str]:
    """Splits ``spec.presets[0].resources`` into names and bracketed keys (kept as ``[0]``)."""
    return [name if name else f"[{key}]" for name, key in _SEGMENT.findall(path)]


def node_at(path: str, root: Field) -> Field | None:
    """The schema node for a field path; indices and map keys may be given or left out."""
    node: Field | None = root
    for segment in path_segments(path):
        if node is None:
            return None
        if segment.startswith("["):
            node = node.items if node.type == "array" else node.values
            continue
        while node is not None and node.type == "array":  # "spec.presets.model" skips [i]
            node = node.items
        if node is None or node.type != "object":
            return None
        node = node.properties.get(segment)
    return node


def merge_types(node: Field) -> ListTypes:
    """What server-side apply needs from the schema: every list's type and keys and the atomic
    maps, by dotted path (list items and map values do not add to the path)."""
    lists: dict[str, tuple[ListKind, tuple[str, ...]]] = {}
    atomic: set[str] = set()
    free: set[str] = set()
    deduced: set[str] = set()
    # Iterative (the schema is ours, but walks stay bounded by construction).
    pending: list[tuple[Field, str]] = [(node, "")]
    while pending:
        current, path = pending.pop()
        if current.type == "array":
            kind = current.list_type or "atomic"
            if kind in ("atomic", "set", "map"):
                lists[path] = (kind, current.list_keys)  # type: ignore[assignment]
            if current.items is not None:
                pending.append((current.items, path))
        elif current.type in ("object", "map"):
            if current.map_type == "atomic":
                atomic.add(path)
            if current.preserve_unknown:
                deduced.add(path)
            elif current.type == "map":
                free.add(path)
            for key, child in (current.properties or {}).items():
                pending.append((child, child_path(path, key)))
    return ListTypes(
        lists=lists,
        atomic_maps=frozenset(atomic),
        free_maps=frozenset(free),
        deduced=frozenset(deduced),
    )


def list_map_keys(node: Field, path: str = "") -> dict[str, tuple[str, ...]]:
    """Every list of maps keyed by `list_keys`, by dotted path: server-side apply merges these
    item by item (``x-kubernetes-list-type: map``); every other list is atomic."""
    found: dict[str, tuple[str, ...]] = {}
    if node.list_keys and node.items is not None and node.items.type == "object":
        found[path] = node.list_keys
    for key, child in (node.properties or {}).items():
        found.update(list_map_keys(child, child_path(path, key)))
    if node.items is not None:
        found.update({p: k for p, k in list_map_keys(node.items, path).items() if p != path})
    return found
