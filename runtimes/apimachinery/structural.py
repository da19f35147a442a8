"""Structural checks generated from the resource schema.

Walks a value against a `Field` tree and reports every type error, missing required field,
unsupported enum value, duplicate list entry, list-length and format problem, each with its
exact path, named as kube-openapi names it (``spec.presets[0].model``, a map value
``spec.estimate.secondsPerStep.h100-80g``). Null values count as unset, as they do for custom
resources.
"""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery import fielderrors as fe
from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.formats import check_format
from runtimes.apimachinery.schema_nodes import Field, child_path, is_whole_float

_NOUNS = {
    "object": "objects",
    "map": "maps",
    "array": "lists",
    "string": "strings",
    "integer": "integers",
    "number": "numbers",
    "boolean": "booleans",
    "quantity": "quantities",
}


def expected_type(node: Field) -> str:
    """What a value of this node must look like, for 'Invalid value' messages."""
    if node.type == "array" and node.items is not None:
        return f"must be a list of {_NOUNS[node.items.type]}"
    if node.type == "map" and node.values is not None:
        return f"must be a map of {_NOUNS[node.values.type]}"
    if node.type == "quantity":
        return "must be a quantity (a string such as '8', '500m' or '64Gi', or a number)"
    article = "an" if node.type[0] in "aeiou" else "a"
    return f"must be {article} {node.type if node.type != 'map' else 'object'}"


def _has_type(node: Field, value: Any) -> bool:
    kind = node.type
    if kind in ("object", "map"):
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):  # bool is an int in Python, never in JSON
        return False
    if kind == "integer":
        # kube-openapi's type check: a whole float64 is an integer (swag.IsFloat64AJSONInteger).
        return isinstance(value, int) or is_whole_float(value)
    return (
        isinstance(value, int | float | str)
        if kind == "quantity"
        else isinstance(value, int | float)
    )


def structural_errors(value: Any, node: Field, path: str) -> list[FieldError]:
    """Every structural problem of `value` (which is set, i.e. not None) against `node`."""
    if not _has_type(node, value):
        # kube-openapi's words (FieldValueTypeInvalid, the value's JSON type), our advice in fix.
        actual = _type_name(value)
        return [
            fe.type_invalid(
                path,
                actual,
                f'{path} in body must be of type {_OPENAPI_TYPES[node.type]}: "{actual}"',
                fix=f"{path} {expected_type(node)}.",
            )
        ]
    if node.type == "object":
        return _object_errors(value, node, path)
    if node.type == "map":
        # A map value's path is dotted (spec.x.key), as kube-openapi's objectValidator names an
        # additionalProperties value (o.Path + "." + key); field.Path.Key writes [key].
        errors: list[FieldError] = []
        for key, item in value.items():
            if item is not None and node.values is not None:
                errors.extend(structural_errors(item, node.values, child_path(path, key)))
        return errors
    if node.type == "array":
        return _array_errors(value, node, path)
    return _scalar_errors(value, node, path)


# The type a schema node publishes (`openapi_schemas`): a quantity is int-or-string.
_OPENAPI_TYPES = {
    "object": "object",
    "map": "object",
    "array": "array",
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "quantity": "integer,string",
}


def _type_name(value: Any) -> str:
    """A value's JSON type as kube-openapi names it (``integer`` for a whole number)."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    for python_type, name in names.items():
        if isinstance(value, python_type):
            return name
    return "integer" if isinstance(value, int) else "number"


def _object_errors(value: dict[str, Any], node: Field, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in node.required:
        if value.get(key) is None:
            errors.append(fe.required(child_path(path, key), _required_hint(node.properties[key])))
    if node.preserve_unknown:
        return errors
    for key, child in node.properties.items():
        item = value.get(key)
        if item is not None:
            errors.extend(structural_errors(item, child, child_path(path, key)))
    return errors


def _required_hint(node: Field) -> str:
    """Says what to set: the allowed values, or the field's own description."""
    if node.enum:
        return "must be one of " + ", ".join(fe.render_value(v) for v in node.enum)
    return node.description


def _array_errors(value: list[Any], node: Field, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if len(value) < node.min_items:
        noun = "entry" if node.min_items == 1 else "entries"
        errors.append(fe.required(path, f"must list at least {node.min_items} {noun}"))
    if node.max_items is not None and len(value) > node.max_items:
        errors.append(fe.too_many(path, len(value), node.max_items))
    if node.items is None:
        return errors
    seen: set[Any] = set()
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if item is None:
            errors.append(fe.required(item_path, "list entries may not be null"))
            continue
        errors.extend(structural_errors(item, node.items, item_path))
        if node.list_type == "set" and isinstance(item, str | int | float | bool):
            if item in seen:
                errors.append(fe.duplicate(item_path, item))
            seen.add(item)
        elif node.list_type == "map" and isinstance(item, dict):
            key = tuple(item.get(k) for k in node.list_keys)
            if all(isinstance(part, str | int) for part in key):
                if key in seen:
                    # One key: point at it, as kube does for container names; several: the item.
                    if len(key) == 1:
                        at, shown = child_path(item_path, node.list_keys[0]), key[0]
                    else:
                        at, shown = item_path, dict(zip(node.list_keys, key, strict=True))
                    errors.append(fe.duplicate(at, shown))
                seen.add(key)
    return errors


def _scalar_errors(value: Any, node: Field, path: str) -> list[FieldError]:
    if isinstance(value, str) and value == "" and node.min_length > 0:
        return [fe.required(path, _required_hint(node))]
    if node.enum:
        if value not in node.enum:
            return [fe.not_supported(path, value, list(node.enum))]
        return []
    if isinstance(value, str) and node.max_length is not None and len(value) > node.max_length:
        return [fe.too_long(path, node.max_length)]
    if node.minimum is not None and isinstance(value, int | float):
        if node.exclusive_minimum and value <= node.minimum:
            return [fe.invalid(path, value, f"must be greater than {node.minimum}")]
        if not node.exclusive_minimum and value < node.minimum:
            return [fe.invalid(path, value, f"must be greater than or equal to {node.minimum}")]
    if node.format and (value != "" or node.type == "quantity"):
        problem = check_format(node.format, value)
        if problem:
            return [fe.invalid(path, value, problem)]
    return []
