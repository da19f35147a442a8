"""OpenAPI v3 component schemas generated from the resource schema.

`component_schemas` turns the `Field` tree of every kind with a schema (``ResourceType.schema``:
TrainingRuntime, TrainingJob) into the ``components.schemas`` map of the group-version document,
shaped as kube-apiserver publishes custom resources: ``dev.nodus.v1beta1.<Kind>`` with its GVK
list and selectable fields, a ``<Kind>List``, nested kinds referenced through ``allOf`` (so
descriptions survive for ``kubectl explain``), quantities as int-or-string, free-form JSON
Schema preserved.
Also the meta/v1 kinds the operations need (ListMeta, Status, DeleteOptions, WatchEvent).
"""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery.formats import FORMAT_PATTERNS, OPENAPI_FORMATS
from runtimes.apimachinery.meta import GROUP, PRECONDITION_FIELDS, VERSION
from runtimes.apimachinery.schema_nodes import Field
from runtimes.registry.resources import ResourceType

Schema = dict[str, Any]
REF_PREFIX = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def gvk(kind: str) -> dict[str, str]:
    return {"group": GROUP, "version": VERSION, "kind": kind}


def component(rt: ResourceType) -> str:
    return f"dev.nodus.{VERSION}.{rt.kind}"


def list_component(rt: ResourceType) -> str:
    return f"dev.nodus.{VERSION}.{rt.kind}List"


def ref(name: str) -> Schema:
    return {"$ref": REF_PREFIX + name}


def _scalar(node: Field) -> Schema:
    if node.type == "quantity":
        out: Schema = {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
        }
    else:
        out = {"type": node.type}
        if node.type == "integer":
            out["format"] = "int64"
        elif node.type == "number":
            out["format"] = "double"
    if node.format in OPENAPI_FORMATS:
        out["format"] = node.format
    if node.format in FORMAT_PATTERNS:
        out["pattern"] = FORMAT_PATTERNS[node.format]
    if node.enum:
        out["enum"] = list(node.enum)
    if node.min_length:
        out["minLength"] = node.min_length
    if node.max_length is not None:
        out["maxLength"] = node.max_length
    if node.minimum is not None:
        out["minimum"] = node.minimum
        if node.exclusive_minimum:
            out["exclusiveMinimum"] = True
    return out


def _schema(node: Field, components: dict[str, Schema]) -> Schema:
    """The inline schema for `node`; shared objects are registered and referenced."""
    if node.type == "object" and node.component and not node.preserve_unknown:
        if node.component not in components:
            components[node.component] = {}  # reserve first: nested kinds may recur
            components[node.component] = _object(node, components)
        out: Schema = {"allOf": [ref(node.component)]}
    elif node.type == "object":
        out = _object(node, components)
    elif node.type == "map":
        out = {"type": "object"}
        if node.map_type:
            out["x-kubernetes-map-type"] = node.map_type
        if node.values is not None:
            out["additionalProperties"] = _schema(node.values, components)
    elif node.type == "array":
        out = {"type": "array", "x-kubernetes-list-type": node.list_type or "atomic"}
        if node.items is not None:
            out["items"] = _schema(node.items, components)
        if node.list_keys:
            out["x-kubernetes-list-map-keys"] = list(node.list_keys)
        if node.min_items:
            out["minItems"] = node.min_items
        if node.max_items is not None:
            out["maxItems"] = node.max_items
    else:
        out = _scalar(node)
    # A property wrapping a component would repeat the component's own description, which
    # `kubectl explain` then prints twice.
    if node.description and not node.component:
        out["description"] = node.description
    if node.default is not None:
        out["default"] = node.default
    return out


def _object(node: Field, components: dict[str, Schema]) -> Schema:
    out: Schema = {"type": "object"}
    if node.description:
        out["description"] = node.description
    if node.map_type:
        out["x-kubernetes-map-type"] = node.map_type
    if node.preserve_unknown:
        out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    out["properties"] = {k: _schema(v, components) for k, v in node.properties.items()}
    if node.required:
        out["required"] = list(node.required)
    return out


def _meta_kinds() -> dict[str, Schema]:
    string, integer = {"type": "string"}, {"type": "integer", "format": "int64"}
    cause = {
        "type": "object",
        "description": "StatusCause names one field that is wrong and why.",
        "properties": {
            "field": {**string, "description": "The field path, e.g. spec.presets[2].method."},
            "message": {**string, "description": "What is wrong, readable by a person."},
            "reason": {
                **string,
                "description": "A machine-readable cause such as FieldValueInvalid.",
            },
        },
    }
    details = {
        "type": "object",
        "description": "StatusDetails identify the object and list the causes.",
        "properties": {
            "name": string,
            "group": string,
            "kind": string,
            "uid": string,
            "causes": {"type": "array", "items": ref(META + "StatusCause")},
            "retryAfterSeconds": {"type": "integer", "format": "int32"},
        },
    }
    status = {
        "type": "object",
        "description": "Status is the body of every error (metav1.Status) plus docs, fix and "
        "requestId, which kubectl and client-go ignore.",
        "properties": {
            "apiVersion": string,
            "kind": string,
            "metadata": {"allOf": [ref(META + "ListMeta")]},
            "status": {**string, "description": "Success or Failure."},
            "message": string,
            "reason": {**string, "description": "A registered reason; each has a docs page."},
            "code": {"type": "integer", "format": "int32"},
            "details": {"allOf": [ref(META + "StatusDetails")]},
            "docs": {**string, "description": "The URL of the reason's docs page."},
            "fix": {**string, "description": "What to do next: a command or the field to change."},
            "requestId": {**string, "description": "Identifies the request in logs."},
        },
        "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}],
    }
    list_meta = {
        "type": "object",
        "description": "ListMeta describes a list: its resourceVersion and continue token.",
        "properties": {
            "continue": string,
            "remainingItemCount": integer,
            "resourceVersion": string,
            "selfLink": string,
            "shardInfo": {"allOf": [ref(META + "ShardInfo")]},
        },
    }
    shard_info = {
        "type": "object",
        "description": "ShardInfo names the shard selector a list was filtered by (KEP-5866): "
        "when present, the list holds only that shard's objects.",
        "required": ["selector"],
        "properties": {
            "selector": {
                **string,
                "description": "The request's shardSelector as it was sent, so a client can "
                "tell which shard it got and merge the lists of several shards.",
            }
        },
    }
    delete_options = {
        "type": "object",
        "description": "DeleteOptions may accompany a delete request.",
        "properties": {
            "apiVersion": string,
            "kind": string,
            "dryRun": {"type": "array", "items": string},
            "gracePeriodSeconds": integer,
            "orphanDependents": {"type": "boolean"},
            "propagationPolicy": string,
            "preconditions": {
                "type": "object",
                "properties": {key: string for key in sorted(PRECONDITION_FIELDS)},
            },
        },
    }
    watch_event = {
        "type": "object",
        "description": "WatchEvent is one line of a watch stream.",
        "required": ["type", "object"],
        "properties": {
            "type": {**string, "description": "ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."},
            "object": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return {
        META + "ListMeta": list_meta,
        META + "ShardInfo": shard_info,
        META + "Status": status,
        META + "StatusDetails": details,
        META + "StatusCause": cause,
        META + "DeleteOptions": delete_options,
        META + "WatchEvent": watch_event,
    }


def component_schemas(kinds: list[ResourceType]) -> dict[str, Schema]:
    """The components of every kind in ``kinds`` (each with a schema), then meta/v1's."""
    components: dict[str, Schema] = {}
    for rt in kinds:
        assert rt.schema is not None
        assert rt.schema.component == component(rt)
        _schema(rt.schema, components)
        top = components[component(rt)]
        top["x-kubernetes-group-version-kind"] = [gvk(rt.kind)]
        if rt.selectable_fields:
            top["x-kubernetes-selectable-fields"] = [{"fieldPath": p} for p in rt.selectable_fields]
        components[list_component(rt)] = {
            "type": "object",
            "description": f"{rt.kind}List is a list of {rt.kind}s.",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "items": {"type": "array", "items": ref(component(rt))},
                "metadata": {"allOf": [ref(META + "ListMeta")]},
            },
            "x-kubernetes-group-version-kind": [gvk(f"{rt.kind}List")],
        }
    components.update(_meta_kinds())
    return components
