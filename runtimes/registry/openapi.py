"""The OpenAPI v3 document served at ``/openapi/v3/apis/nodus.dev/v1beta1``.

kubectl reads it for ``explain`` (GVK on every operation, descriptions from the schema),
``apply`` and ``edit`` (PATCH must declare ``fieldValidation`` and exactly the three patch
media types we accept, or kubectl falls back to client-side validation or strategic merge
patches). The document is generated from the resource schema; its hash (uppercase hex SHA-512
of the served bytes) changes whenever the schema does, which busts kubectl's HTTP cache.
"""

from __future__ import annotations

import copy
import hashlib
from functools import cache
from typing import Any

import orjson

from runtimes.apimachinery import mediatypes
from runtimes.apimachinery.meta import API_VERSION, GROUP, VERSION
from runtimes.registry.kinds import all_kinds
from runtimes.registry.openapi_schemas import (
    META,
    component,
    component_schemas,
    gvk,
    list_component,
    ref,
)
from runtimes.registry.resources import ResourceType

Operation = dict[str, Any]
GV_PATH = f"apis/{GROUP}/{VERSION}"
PREFIX = f"/apis/{GROUP}/{VERSION}"
PATCH_MEDIA_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
# Bodies are read in the types answers are written in (apimachinery.mediatypes, which the API's
# content negotiation reads too).
_BODY_MEDIA_TYPES = mediatypes.answer_types()
_TAG = "nodusDev_v1beta1"
_OP_SUFFIX = "NodusDevV1beta1"


def _query(name: str, description: str, kind: str = "string", unique: bool = False) -> Operation:
    schema: dict[str, Any] = {"type": kind}
    if unique:
        schema["uniqueItems"] = True
    return {"name": name, "in": "query", "description": description, "schema": schema}


def _path_param(name: str, description: str) -> Operation:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "uniqueItems": True},
    }


_PRETTY = _query("pretty", "If 'true', the output is pretty printed.")
_DRY_RUN = _query(
    "dryRun",
    "When present, the request is checked but nothing is persisted. The only value is All.",
    unique=True,
)
_FIELD_MANAGER = _query(
    "fieldManager",
    "The name of the actor making the change, recorded in managedFields.",
    unique=True,
)
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "What to do with unknown or duplicate fields: Ignore (drop them), Warn (the default: drop "
    "them and answer with a Warning header each) or Strict (fail the request).",
    unique=True,
)
_FORCE = _query(
    "force",
    "Force an apply: take over fields owned by other managers.",
    kind="boolean",
    unique=True,
)
_WRITE_PARAMS = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
_LIST_PARAMS = [
    _query(
        "allowWatchBookmarks", "Ask for BOOKMARK events on a watch.", kind="boolean", unique=True
    ),
    _query("continue", "The continue token of the previous page.", unique=True),
    _query("fieldSelector", "Select by fields, e.g. spec.task=SFT.", unique=True),
    _query("labelSelector", "Select by labels, e.g. team=post-training.", unique=True),
    _query("limit", "At most this many items per page.", kind="integer", unique=True),
    _query("resourceVersion", "Where the list or watch starts.", unique=True),
    _query(
        "shardSelector",
        "Only the objects whose 64-bit FNV-1a hash of a field falls in the ranges named "
        "(KEP-5866): shardRange(object.metadata.uid, '0x0000000000000000', "
        "'0x8000000000000000'), field object.metadata.uid or object.metadata.namespace, start "
        "inclusive, end exclusive, 16 hex digits ('0x10000000000000000' ends the last shard), "
        "ranges of one field joined with ||. A sharded list says so in metadata.shardInfo.",
        unique=True,
    ),
    _query(
        "resourceVersionMatch", "How resourceVersion applies: Exact or NotOlderThan.", unique=True
    ),
    _query(
        "sendInitialEvents",
        "Start a watch with the current objects as ADDED events, then a bookmark.",
        kind="boolean",
        unique=True,
    ),
    _query("timeoutSeconds", "End the call after this many seconds.", kind="integer", unique=True),
    _query("watch", "Stream changes instead of returning a list.", kind="boolean", unique=True),
]
_DELETE_PARAMS = [
    _DRY_RUN,
    _query(
        "gracePeriodSeconds", "Seconds before deletion; 0 deletes now.", kind="integer", unique=True
    ),
    _query("propagationPolicy", "Orphan, Background or Foreground.", unique=True),
]


def _content(schema: dict[str, Any], media_types: tuple[str, ...] = _BODY_MEDIA_TYPES) -> Operation:
    return {"content": {media: {"schema": schema} for media in media_types}}


_CODE_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


def _ok(schema: dict[str, Any], *codes: str) -> dict[str, dict[str, Any]]:
    return {code: schema for code in codes}


def _responses(
    codes: dict[str, dict[str, Any]], media: tuple[str, ...] = _BODY_MEDIA_TYPES
) -> Operation:
    responses: Operation = {
        code: {"description": _CODE_TEXT[code], **_content(schema, media)}
        for code, schema in codes.items()
    }
    responses["401"] = {"description": "Unauthorized"}
    responses["default"] = {
        "description": "An error: a metav1.Status whose reason is a registered code.",
        **_content(ref(META + "Status")),
    }
    return responses


def _operation(
    kind: str,
    action: str,
    verb: str,
    scope: str,
    summary: str,
    responses: Operation,
    params: list[Operation] | None = None,
    body: Operation | None = None,
) -> Operation:
    op: Operation = {
        "tags": [_TAG],
        "description": summary,
        "operationId": f"{verb}{_OP_SUFFIX}{scope}",
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(kind),
    }
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = body
    return op


def _documented() -> list[ResourceType]:
    """The kinds the document describes: those with a schema."""
    return [rt for rt in all_kinds() if rt.schema is not None]


def _paths() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for rt in _documented():
        paths.update(_kind_paths(rt))
    return paths


def _read_only_paths(rt: ResourceType) -> dict[str, Any]:
    """A read-only, cluster-scoped kind (the Accelerator catalog): get, list and watch only;
    kubectl explain finds it by these operations' GVK."""
    collection = f"{PREFIX}/{rt.plural}"
    list_media = mediatypes.answer_types(watch=True)
    return {
        collection: {
            "get": _operation(
                rt.kind,
                "list",
                "list",
                rt.kind,
                f"list or watch {rt.kind}s",
                _responses(_ok(ref(list_component(rt)), "200"), list_media),
                _LIST_PARAMS,
            ),
            "parameters": [_PRETTY],
        },
        f"{collection}/{{name}}": {
            "get": _operation(
                rt.kind,
                "get",
                "read",
                rt.kind,
                f"read the specified {rt.kind}",
                _responses(_ok(ref(component(rt)), "200")),
            ),
            "parameters": [_path_param("name", f"The name of the {rt.kind}."), _PRETTY],
        },
    }


def _kind_paths(rt: ResourceType) -> dict[str, Any]:
    if rt.read_only:
        return _read_only_paths(rt)
    namespaced = f"{PREFIX}/namespaces/{{namespace}}/{rt.plural}"
    runtime, runtime_list = ref(component(rt)), ref(list_component(rt))
    list_media = mediatypes.answer_types(watch=True)
    body = {"required": True, **_content(runtime)}
    patch_body = {
        "required": True,
        **_content({"type": "object", "description": "The patch."}, PATCH_MEDIA_TYPES),
    }
    namespace = _path_param("namespace", "The project (namespace) of the objects.")
    name = _path_param("name", f"The name of the {rt.kind}.")
    ns_scope = f"Namespaced{rt.kind}"

    def item_ops(scope: str, what: str) -> dict[str, Operation]:
        return {
            "get": _operation(
                rt.kind, "get", "read", scope, f"read the {what}", _responses(_ok(runtime, "200"))
            ),
            "put": _operation(
                rt.kind,
                "put",
                "replace",
                scope,
                f"replace the {what}",
                _responses(_ok(runtime, "200", "201")),
                _WRITE_PARAMS,
                body,
            ),
            "patch": _operation(
                rt.kind,
                "patch",
                "patch",
                scope,
                f"partially update the {what}",
                _responses(_ok(runtime, "200", "201")),
                [*_WRITE_PARAMS, _FORCE],
                patch_body,
            ),
        }

    item = item_ops(ns_scope, f"specified {rt.kind}")
    item["delete"] = _operation(
        rt.kind,
        "delete",
        "delete",
        ns_scope,
        f"delete a {rt.kind}",
        _responses(_ok(ref(META + "Status"), "200", "202")),
        _DELETE_PARAMS,
        {**_content(ref(META + "DeleteOptions"))},
    )
    compile_request = {
        "type": "object",
        "description": "A TrainingJob draft (apiVersion, kind, spec) to compile against "
        "the runtime.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    compile_result = {
        "type": "object",
        "description": "The compiled job: resolved image, command, parameters, resources, matched "
        "offerings and the estimate, or the field errors that stop it.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    paths: dict[str, Any] = {
        f"{PREFIX}/{rt.plural}": {
            "get": _operation(
                rt.kind,
                "list",
                "list",
                f"{rt.kind}ForAllNamespaces",
                f"list or watch {rt.kind}s in every project",
                _responses(_ok(runtime_list, "200"), list_media),
                _LIST_PARAMS,
            ),
            "parameters": [_PRETTY],
        },
        namespaced: {
            "get": _operation(
                rt.kind,
                "list",
                "list",
                ns_scope,
                f"list or watch {rt.kind}s",
                _responses(_ok(runtime_list, "200"), list_media),
                _LIST_PARAMS,
            ),
            "post": _operation(
                rt.kind,
                "post",
                "create",
                ns_scope,
                f"create a {rt.kind}",
                _responses(_ok(runtime, "200", "201", "202")),
                _WRITE_PARAMS,
                body,
            ),
            "delete": _operation(
                rt.kind,
                "deletecollection",
                "deletecollection",
                ns_scope,
                f"delete a collection of {rt.kind}s",
                _responses(_ok(ref(META + "Status"), "200")),
                [*_LIST_PARAMS, *_DELETE_PARAMS],
                {**_content(ref(META + "DeleteOptions"))},
            ),
            "parameters": [namespace, _PRETTY],
        },
        f"{namespaced}/{{name}}": {**item, "parameters": [name, namespace, _PRETTY]},
    }
    if "status" in rt.subresources:
        paths[f"{namespaced}/{{name}}/status"] = {
            **item_ops(f"{ns_scope}Status", f"status of the specified {rt.kind}"),
            "parameters": [name, namespace, _PRETTY],
        }
    if "compile" in rt.subresources:
        paths[f"{namespaced}/{{name}}/compile"] = {
            "post": _operation(
                rt.kind,
                "post",
                "compile",
                ns_scope,
                "compile a TrainingJob draft against the runtime",
                _responses(_ok(compile_result, "200"), ("application/json",)),
                [_DRY_RUN],
                {"required": True, **_content(compile_request)},
            ),
            "parameters": [name, namespace, _PRETTY],
        }
    return paths


def openapi_v3_document() -> dict[str, Any]:
    """The whole group-version document; a fresh copy callers may change."""
    return copy.deepcopy(_document())


@cache
def _document() -> dict[str, Any]:
    return {
        "openapi": "3.0.0",
        "info": {"title": "Nodus console", "version": API_VERSION},
        "paths": _paths(),
        "components": {"schemas": component_schemas(_documented())},
    }


@cache
def openapi_v3_bytes() -> bytes:
    """The served bytes; keys sorted so the hash is stable across runs."""
    return orjson.dumps(_document(), option=orjson.OPT_SORT_KEYS)


def openapi_v3_hash() -> str:
    """Uppercase hex SHA-512 of the served bytes, as kube-openapi's handler3 computes it."""
    return hashlib.sha512(openapi_v3_bytes()).hexdigest().upper()


def openapi_v3_discovery() -> dict[str, Any]:
    """The ``/openapi/v3`` index: one group-version, its key without a leading slash."""
    url = f"/openapi/v3/{GV_PATH}?hash={openapi_v3_hash()}"
    return {"paths": {GV_PATH: {"serverRelativeURL": url}}}
