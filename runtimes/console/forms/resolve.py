"""Effective schemas: local references, `allOf` merged, `if/then/else` applied, unions split.

Only what a form needs: a node's own keywords after following `$ref` (local references only,
JSON pointers and anchors, including recursive ones, bounded by the caller's depth) and merging
`allOf`. Conditionals pick their branch from the value being edited, which is how `then`'s extra
fields appear once the `if` holds.
"""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import unquote

from jsonpointer import EndOfList, JsonPointer, JsonPointerException
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from runtimes.catalog.parameters import compiled_validator

Schema = dict[str, Any]
SCALAR_TYPES = ("string", "integer", "number", "boolean", "null")
# Keywords that combine as "all must hold" when merged; the rest: the later one wins.
_LIST_UNION = ("required",)


class Unrenderable(Exception):
    """This subtree needs the JSON textarea (a remote $ref, a boolean schema false, ...)."""


def pointer(root: Schema, ref: str) -> Schema:
    """The schema a local ``$ref`` names inside ``root``, read as jsonschema reads it.

    A fragment is percent-decoded, then either a JSON pointer (``#/$defs/lora``), walked by
    jsonpointer, or an anchor (``#lora``), which referencing finds among the ``$anchor``s; a
    form follows many pointers, and jsonpointer walks one in a fraction of referencing's time.
    """
    if not ref.startswith("#"):
        raise Unrenderable(f"remote reference {ref}")
    unresolvable = Unrenderable(f"unresolvable reference {ref}")
    fragment = unquote(ref[1:])
    node: Any
    if fragment and not fragment.startswith("/"):
        try:
            resolver = Registry().resolver_with_root(DRAFT202012.create_resource(root))
            node = resolver.lookup(ref).contents
        except Exception:
            # Besides its Unresolvable, referencing fails in assorted ways on a malformed schema
            # (a non-string $id, a scalar where a subschema belongs); all mean the same here.
            raise unresolvable from None
    else:
        try:
            node = JsonPointer(fragment).resolve(root)
        except JsonPointerException:
            raise unresolvable from None
        if isinstance(node, EndOfList):  # "-" names the end of an array, not a schema in it
            raise unresolvable
    if node is True:
        return {}
    if not isinstance(node, dict):
        raise Unrenderable(f"reference {ref} is not a schema")
    return node


def merge(base: Schema, extra: Schema) -> Schema:
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(merged.get(key), dict):
            props = dict(merged[key])
            for name, sub in value.items():
                props[name] = merge(props[name], sub) if name in props else sub
            merged[key] = props
        elif key in _LIST_UNION and isinstance(merged.get(key), list):
            merged[key] = list(dict.fromkeys([*merged[key], *value]))
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def deref(schema: Any, root: Schema, hops: int = 0) -> Schema:
    """The node with `$ref` followed and `allOf` merged in (sibling keywords win over both)."""
    if schema is True or schema == {}:
        return {}
    if schema is False or not isinstance(schema, dict):
        raise Unrenderable("a schema that accepts nothing")
    if hops > 32:
        raise Unrenderable("reference cycle without content")
    node = dict(schema)
    if "$ref" in node:
        target = deref(pointer(root, node.pop("$ref")), root, hops + 1)
        node = merge(target, node)
    for part in node.pop("allOf", None) or []:
        node = merge(node, deref(part, root, hops + 1))
    return node


def holds(schema: Any, value: Any, root: Schema) -> bool:
    """Whether `value` satisfies `schema`, resolving references against the whole document."""
    whole: Any = schema
    if isinstance(schema, dict):
        # Only the definitions travel along, so local references resolve; the root's own
        # keywords must not leak into the condition.
        whole = {**{k: root[k] for k in ("$defs", "definitions") if k in root}, **schema}
    try:
        return bool(compiled_validator(whole, check_formats=False).is_valid(value))
    except Exception:
        return False


def effective(schema: Any, root: Schema, value: Any = None) -> Schema:
    """`deref`, then the `then` or `else` branch chosen by `value` merged in (repeatedly)."""
    node = deref(schema, root)
    for _ in range(8):  # a branch may carry its own if/then/else
        condition = node.pop("if", None)
        then, otherwise = node.pop("then", None), node.pop("else", None)
        if condition is None:
            break
        # An `if` over properties says nothing about a value that is not an object yet.
        if isinstance(value, dict) or not _about_properties(condition):
            branch = then if holds(condition, value, root) else otherwise
            if branch is not None:
                node = merge(node, deref(branch, root))
    return node


def _about_properties(condition: Any) -> bool:
    return isinstance(condition, dict) and any(
        k in condition for k in ("properties", "required", "dependentRequired")
    )


def variants(node: Schema, root: Schema) -> list[Schema] | None:
    """The forms a union allows: `oneOf`/`anyOf` branches, or one per type in a type list.

    Keywords beside the union (title, description, default) stay on the union itself.
    """
    for keyword in ("oneOf", "anyOf"):
        if keyword in node:
            base = {k: v for k, v in node.items() if k not in (keyword, "title", "description")}
            base.pop("default", None)
            base.pop("examples", None)
            return [merge(base, deref(branch, root)) for branch in node[keyword]]
    kinds = node.get("type")
    if isinstance(kinds, list) and len(kinds) > 1:
        rest = {k: v for k, v in node.items() if k not in ("type", "title", "description")}
        rest.pop("default", None)
        return [{**rest, "type": kind} for kind in kinds]
    return None


def variant_label(branch: Schema, index: int) -> str:
    if branch.get("title"):
        return str(branch["title"])
    for prop in (branch.get("properties") or {}).values():
        if isinstance(prop, dict) and "const" in prop:
            return str(prop["const"])
    if "const" in branch:
        return str(branch["const"])
    kind = branch.get("type")
    if isinstance(kind, str):
        return kind
    return f"Option {index + 1}"


def variant_for(value: Any, branches: list[Schema], root: Schema) -> int:
    """The first branch the value satisfies, or the first branch."""
    if value is None:
        return next((i for i, b in enumerate(branches) if b.get("type") != "null"), 0)
    for index, branch in enumerate(branches):
        if holds(branch, value, root):
            return index
    # Close enough: a branch of the value's JSON type (or matching a const discriminator).
    for index, branch in enumerate(branches):
        if type_matches(branch.get("type"), value):
            return index
    return 0


def type_matches(kind: Any, value: Any) -> bool:
    names = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
    }
    return bool(names.get(kind)) if isinstance(kind, str) else False


def kind_of(node: Schema) -> str:
    """The widget family: a JSON type, enum, const, union or json (the fallback)."""
    if "const" in node:
        return "const"
    if "enum" in node:
        return "enum"
    kind = node.get("type")
    if "oneOf" in node or "anyOf" in node or (isinstance(kind, list) and len(kind) > 1):
        return "union"
    if isinstance(kind, list) and len(kind) == 1:
        kind = kind[0]
    if kind in (*SCALAR_TYPES, "object", "array"):
        return str(kind)
    if "properties" in node:
        return "object"
    if "items" in node:
        return "array"
    return "json"
