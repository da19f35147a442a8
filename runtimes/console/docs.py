"""Documentation pages generated from the sources of truth: error reasons and the schema.

`/docs/errors/<Reason>` is the page every API Status links to in its `docs` field; it is rendered
from `runtimes.apimachinery.errors.REASONS`, so a reason cannot lack its page. `/docs/api` walks
the schema of every kind that has one (TrainingRuntime, then TrainingJob) and lists every field
with its type, allowed values, default and description.
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
from runtimes.registry.kinds import TRAINING_JOBS, TRAINING_RUNTIMES
from runtimes.registry.resources import ResourceType
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
    prefix: str = ""  # told apart from the same path of another kind on the same page

    @property
    def default_text(self) -> str:
        """JSON, as a manifest would carry it (``["Train"]``, ``true``)."""
        return "" if self.default is None else json.dumps(self.default)

    @property
    def anchor(self) -> str:
        return "f-" + self.prefix + self.path.replace("[]", "").replace(".", "-").replace("[*]", "")


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


def walk(
    node: Field, path: str = "", depth: int = 0, required: bool = False, prefix: str = ""
) -> Iterator[FieldDoc]:
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
            prefix=prefix,
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
                child,
                f"{path}{suffix}.{key}" if path else key,
                depth + 1,
                key in inner.required,
                prefix,
            )


def api_fields(rt: ResourceType = TRAINING_RUNTIMES) -> list[FieldDoc]:
    assert rt.schema is not None
    prefix = "" if rt is TRAINING_RUNTIMES else f"{rt.singular}-"
    return list(walk(rt.schema, prefix=prefix))


def _kind_docs(rt: ResourceType) -> dict[str, Any]:
    assert rt.schema is not None
    fields = api_fields(rt)
    return {
        "kind": rt.kind,
        "plural": rt.plural,
        "short": rt.short_names[0] if rt.short_names else rt.plural,
        "anchor": rt.singular,
        "description": rt.schema.description,
        "selectable": rt.selectable_fields,
        "sections": [
            (top, [f for f in fields if f.path == top or f.path.startswith(top + ".")])
            for top in ("apiVersion", "kind", "metadata", "spec", "status")
        ],
    }


@requires(DOCS)
def api_reference(request: HttpRequest) -> HttpResponse:
    context = {
        "kinds": [_kind_docs(TRAINING_RUNTIMES), _kind_docs(TRAINING_JOBS)],
        "api_version": schema.API_VERSION,
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
