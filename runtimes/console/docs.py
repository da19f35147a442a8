"""Documentation pages generated from the sources of truth: error reasons and the schema.

`/docs/errors/<Reason>` is the page every API Status links to in its `docs` field; it is rendered
from `runtimes.apimachinery.errors.REASONS`, so a reason cannot lack its page. `/docs/api` walks
`runtimes.registry.trainingruntime.schema` and lists every field with its type, allowed values,
default and description.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from runtimes.apimachinery.errors import REASONS
from runtimes.console.authorization import requires
from runtimes.registry import authorization
from runtimes.registry.trainingruntime import schema
from runtimes.registry.trainingruntime.schema import Field

DOCS = authorization.public("generated from the sources; every Status links here")


@dataclass(frozen=True)
class FieldDoc:
    path: str
    depth: int
    type: str
    required: bool
    enum: tuple[Any, ...]
    default: Any
    constraints: tuple[str, ...]
    description: str

    @property
    def default_text(self) -> str:
        """JSON, as a manifest would carry it (``["Train"]``, ``true``)."""
        return "" if self.default is None else json.dumps(self.default)

    @property
    def anchor(self) -> str:
        return "f-" + self.path.replace("[]", "").replace(".", "-").replace("[*]", "")


def type_of(node: Field) -> str:
    if node.type == "array" and node.items is not None:
        return f"[]{type_of(node.items)}"
    if node.type == "map" and node.values is not None:
        return f"map[string]{type_of(node.values)}"
    if node.type == "object" and node.component:
        return node.component.rsplit(".", 1)[-1]
    return node.type


def constraints_of(node: Field) -> tuple[str, ...]:
    found = []
    if node.format:
        found.append(f"format: {node.format}")
    if node.min_length:
        found.append(f"minLength: {node.min_length}")
    if node.max_length is not None:
        found.append(f"maxLength: {node.max_length}")
    if node.min_items:
        found.append(f"minItems: {node.min_items}")
    if node.max_items is not None:
        found.append(f"maxItems: {node.max_items}")
    if node.minimum is not None:
        op = ">" if node.exclusive_minimum else "≥"
        found.append(f"{op} {node.minimum}")
    if node.list_type:
        keys = f" keyed by {', '.join(node.list_keys)}" if node.list_keys else ""
        found.append(f"list: {node.list_type}{keys}")
    if node.preserve_unknown:
        found.append("free-form (fields preserved)")
    return tuple(found)


def walk(node: Field, path: str = "", depth: int = 0, required: bool = False) -> Iterator[FieldDoc]:
    if path:
        yield FieldDoc(
            path=path,
            depth=depth,
            type=type_of(node),
            required=required,
            enum=node.enum,
            default=node.default,
            constraints=constraints_of(node),
            description=node.description,
        )
    inner = node
    suffix = ""
    while inner.type in ("array", "map"):
        child = inner.items if inner.type == "array" else inner.values
        if child is None:
            return
        suffix += "[]" if inner.type == "array" else "[*]"
        inner = child
    if inner.type == "object":
        for key, child in inner.properties.items():
            yield from walk(
                child, f"{path}{suffix}.{key}" if path else key, depth + 1, key in inner.required
            )


def api_fields() -> list[FieldDoc]:
    return list(walk(schema.TRAINING_RUNTIME))


@requires(DOCS)
def api_reference(request: HttpRequest) -> HttpResponse:
    fields = api_fields()
    sections = [
        (top, [f for f in fields if f.path == top or f.path.startswith(top + ".")])
        for top in ("apiVersion", "kind", "metadata", "spec", "status")
    ]
    context = {
        "sections": sections,
        "kind": schema.KIND,
        "api_version": schema.API_VERSION,
        "plural": schema.PLURAL,
        "description": schema.TRAINING_RUNTIME.description,
        "selectable": schema.SELECTABLE_FIELDS,
        "reasons": sorted(REASONS.items()),
    }
    return render(request, "docs/api.html", context)


@requires(DOCS)
def error_index(request: HttpRequest) -> HttpResponse:
    return render(request, "docs/errors.html", {"reasons": sorted(REASONS.items())})


@requires(DOCS)
def error_reason(request: HttpRequest, reason: str) -> HttpResponse:
    entry = REASONS.get(reason)
    if entry is None:
        raise Http404(f"no error reason {reason}")
    return render(request, "docs/error.html", {"name": reason, "reason": entry})
