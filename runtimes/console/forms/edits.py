"""Array edits in a generated form: add, remove and reorder items, then fill new ones.

The form posts an edit as ``_op=add:p.tags`` or ``_op=up:p.tags.2``; the value read back from
the form is edited here and redrawn, so the server stays the only place that knows the schema.
"""

from __future__ import annotations

import copy
from typing import Any

from runtimes.console.forms import keys
from runtimes.console.forms.resolve import (
    Schema,
    Unrenderable,
    effective,
    kind_of,
    variant_for,
    variants,
)
from runtimes.console.forms.values import MISSING, prefill, widget_kind


def edit_array(value: Any, key: str, op: str) -> Any:
    """Applies an array edit (`add`, `remove`, `up`, `down`) at `key`; returns the new value.

    `add` targets the array's own key; the others target an item's key. The new item is
    `None` here; the form fills it with the item schema's prefill.
    """
    segments = keys.path_of(key)
    array_path = segments if op == "add" else segments[:-1]
    box: list[Any] = [copy.deepcopy(value)]
    container: Any = box
    slot: Any = 0
    for position, segment in enumerate(array_path):
        current = container[slot]
        position_in = keys.index(segment)
        if isinstance(current, list) and position_in is not None and position_in < len(current):
            container, slot = current, position_in
        elif isinstance(current, dict):
            if segment not in current:
                if op != "add":
                    return box[0]
                current[segment] = [] if position == len(array_path) - 1 else {}
            container, slot = current, segment
        else:
            return box[0]
    array = container[slot]
    if not isinstance(array, list):
        if op != "add":
            return box[0]
        array = container[slot] = []
    if op == "add":
        array.append(None)
        return box[0]
    named = keys.index(segments[-1]) if segments else None
    index = -1 if named is None else named
    if not 0 <= index < len(array):
        return box[0]
    if op == "remove":
        array.pop(index)
    elif op == "up" and index > 0:
        array[index - 1], array[index] = array[index], array[index - 1]
    elif op == "down" and index < len(array) - 1:
        array[index + 1], array[index] = array[index], array[index + 1]
    return box[0]


def fill_new_items(schema: Any, root: Schema, value: Any, depth: int = 0) -> Any:
    """Replaces the `None` items `edit_array` added with their schema's prefill."""
    try:
        node = effective(schema, root, value if isinstance(value, dict) else None)
    except Unrenderable:
        return value
    kind = widget_kind(node, depth)
    if kind == "array" and isinstance(value, list):
        items = node.get("items", {})
        filled = []
        for item in value:
            if item is None:
                fresh = prefill(items, root, depth + 1, force=True)
                item = _empty_of(items, root) if fresh is MISSING else fresh
            filled.append(fill_new_items(items, root, item, depth + 1))
        return filled
    if kind == "object" and isinstance(value, dict):
        props = node.get("properties") or {}
        return {
            k: fill_new_items(props[k], root, v, depth + 1) if k in props else v
            for k, v in value.items()
        }
    if kind == "union" and value is not None:
        branches = variants(node, root) or []
        if branches:
            branch = branches[variant_for(value, branches, root)]
            return fill_new_items(branch, root, value, depth + 1)
    return value


def _empty_of(schema: Any, root: Schema) -> Any:
    try:
        node = effective(schema, root)
    except Unrenderable:
        return None
    kind = kind_of(node)
    if kind == "enum":
        return node["enum"][0] if node.get("enum") else None
    return {"string": "", "boolean": False, "object": {}, "array": []}.get(kind)
