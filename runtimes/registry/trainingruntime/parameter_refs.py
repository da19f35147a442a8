"""References inside a parameter schema: each resolves within it, and none loops in place.

jsonschema follows a ``$ref`` by recursing into its target. Keywords that apply a subschema to
the *same* value (``$ref``, ``$dynamicRef``, ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``,
``then``, ``else``, ``dependentSchemas``) can close a loop, such as ``a: {$ref: b}`` and
``b: {$ref: a}``, that never reaches the value's next level: validating anything against it
recurses until Python's stack runs out (a RecursionError, once a 500 on compile). Such loops are
refused at admission, at the ``$ref`` that closes the loop. Recursion *through* ``properties``,
``items`` and the like (a tree of options) goes one level into the value per step, so the body's
depth bound (`apimachinery.bounds`) ends it: that stays allowed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from referencing import Registry
from referencing._core import Resolver
from referencing.jsonschema import DRAFT202012

from runtimes.apimachinery import fielderrors as fe
from runtimes.apimachinery.fielderrors import FieldError

# A local reference that points at nothing is refused here as well: jsonschema would only find out
# while validating a job. References are resolved as jsonschema resolves them (`referencing`, so
# ``$id`` scopes and ``$anchor``s count), and the walk is iterative with a visited set: the schema's
# nesting is the writer's choice, the stack's depth is not.

# Keywords whose subschemas apply to the value itself, and those that apply to a part of it
# (or only through a reference, as $defs). Together: every subschema position of Draft 2020-12.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)
_PART_ONE = (
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_PART_LIST = ("prefixItems",)
_PART_MAP = ("properties", "patternProperties", "$defs", "definitions")
_REFS = ("$ref", "$dynamicRef")

_LOOP_FIX = (
    "Break the loop: point one of its $refs at a schema that describes the value itself, or "
    "reach the recursion through properties or items, so that each step goes one level into "
    "the value."
)


def json_path(prefix: str, parts: Any) -> str:
    path = prefix
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.replace("_", "a").isalnum() and not part[:1].isdigit():
            path += f".{part}"
        else:
            path += f"[{part}]"
    return path


def _children(node: dict[str, Any], path: str) -> Iterator[tuple[Any, str, bool]]:
    """(subschema, its path, whether it applies to the same value) for each subschema."""
    for keyword in (*_IN_PLACE_ONE, *_PART_ONE):
        if keyword in node:
            yield node[keyword], json_path(path, [keyword]), keyword in _IN_PLACE_ONE
    for keyword in (*_IN_PLACE_LIST, *_PART_LIST):
        if isinstance(node.get(keyword), list):
            for index, sub in enumerate(node[keyword]):
                yield sub, json_path(path, [keyword, index]), keyword in _IN_PLACE_LIST
    for keyword in (*_IN_PLACE_MAP, *_PART_MAP):
        if isinstance(node.get(keyword), dict):
            for name, sub in node[keyword].items():
                yield sub, json_path(path, [keyword, name]), keyword in _IN_PLACE_MAP


class _Graph:
    """Every subschema (by identity) and the in-place edges between them."""

    def __init__(self, schema: dict[str, Any], prefix: str) -> None:
        self.errors: list[FieldError] = []
        self.order: list[int] = []
        # id -> the subschema's out-edges: (target id, the field of the edge, its $ref or "")
        self.edges: dict[int, list[tuple[int, str, str]]] = {}
        self._kept: list[Any] = []  # the subschemas, alive while their ids are keys
        self._pending: list[tuple[dict[str, Any], str, Resolver[Any]]] = []
        self._refs: list[tuple[int, str, str, Resolver[Any]]] = []
        root = Registry().resolver_with_root(DRAFT202012.create_resource(schema))
        self._add(schema, prefix, root)
        # The tree first, so every subschema is named by where it is written; then references,
        # whose targets outside the tree (rare: "#/properties") are walked from the reference.
        while self._pending or self._refs:
            while self._pending:
                self._visit(*self._pending.pop())
            if self._refs:
                self._resolve(*self._refs.pop())

    def _add(self, node: Any, path: str, resolver: Resolver[Any]) -> int | None:
        if not isinstance(node, dict):
            return None  # true/false, or something the meta-schema already refused
        if id(node) not in self.edges:
            self.edges[id(node)] = []
            self._kept.append(node)
            self._pending.append((node, path, resolver))
        return id(node)

    def _visit(self, node: dict[str, Any], path: str, resolver: Resolver[Any]) -> None:
        self.order.append(id(node))
        if isinstance(node.get("$id"), str):
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        for keyword in _REFS:
            ref = node.get(keyword)
            # A remote reference is refused on its own (parameter_schema).
            if isinstance(ref, str) and ref.startswith("#"):
                self._refs.append((id(node), json_path(path, [keyword]), ref, resolver))
        for sub, sub_path, in_place in _children(node, path):
            child = self._add(sub, sub_path, resolver)
            if child is not None and in_place:
                self.edges[id(node)].append((child, sub_path, ""))

    def _resolve(self, source: int, field: str, ref: str, resolver: Resolver[Any]) -> None:
        try:
            resolved = resolver.lookup(ref)
        except Exception:
            # Besides Unresolvable, referencing fails in assorted ways on odd schemas; all mean
            # the same here.
            self.errors.append(fe.invalid(field, ref, "refers to nothing in this schema"))
            return
        target = self._add(resolved.contents, ref, resolved.resolver)
        if target is not None:
            self.edges[source].append((target, field, ref))

    def loops(self) -> list[FieldError]:
        """One error per $ref that closes an in-place loop (iterative depth-first search)."""
        found: dict[str, FieldError] = {}
        done: set[int] = set()
        for start in self.order:
            if start in done:
                continue
            # The path being explored: (subschema, its out-edges, the edge that led to it).
            trail: list[tuple[int, Iterator[tuple[int, str, str]], tuple[int, str, str] | None]]
            trail = [(start, iter(self.edges[start]), None)]
            on_trail = {start: 0}
            while trail:
                node, edges, _ = trail[-1]
                edge = next(edges, None)
                if edge is None:
                    done.add(node)
                    del on_trail[node]
                    trail.pop()
                    continue
                target = edge[0]
                if target in on_trail:
                    loop = [step[2] for step in trail[on_trail[target] + 1 :]] + [edge]
                    refs = [step for step in loop if step is not None and step[2]]
                    _, field, ref = refs[-1]
                    names = [step[2] for step in refs]
                    if len(names) > 5:  # the message names the loop, not all its steps
                        names = [*names[:2], f"… {len(names) - 4} more …", *names[-2:]]
                    chain = " → ".join(names)
                    found.setdefault(field, _loop_error(field, ref, chain))
                elif target not in done:
                    on_trail[target] = len(trail)
                    trail.append((target, iter(self.edges[target]), edge))
        return list(found.values())


def _loop_error(field: str, ref: str, chain: str) -> FieldError:
    detail = (
        f"loops back on itself ({chain}) without going one level into the value (through "
        "properties or items): validating would never end"
    )
    return dataclasses.replace(fe.invalid(field, ref, detail), fix=_LOOP_FIX)


def ref_errors(schema: dict[str, Any], prefix: str) -> list[FieldError]:
    """Local references that resolve to nothing, and those that close an in-place loop."""
    graph = _Graph(schema, prefix)
    return sorted(graph.errors + graph.loops(), key=lambda e: e.field)
