"""Reads: list responses (plain or Table) and single objects.

Selectors, pagination over consistent snapshots and resourceVersion rules plug in here.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from runtimes import access, store
from runtimes.api import tables
from runtimes.api.base import KubeView, respond

Obj = dict[str, Any]


def visible(
    view: KubeView, request: Request, objects: list[Obj], namespace: str | None
) -> list[Obj]:
    """A cluster-wide list shows only the projects the user may read."""
    if namespace is not None or not view.rt.namespaced:
        return objects
    projects = access.readable_projects(request.user)
    if projects is None:
        return objects
    allowed = set(projects)
    return [o for o in objects if o["metadata"].get("namespace") in allowed]


def select(view: KubeView, request: Request, namespace: str | None) -> list[Obj]:
    objects, _revision = store.list_objects(view.rt, namespace)
    return visible(view, request, objects, namespace)


def list_response(view: KubeView, request: Request, namespace: str | None) -> Response:
    objects, revision = store.list_objects(view.rt, namespace)
    objects = visible(view, request, objects, namespace)
    list_meta: Obj = {"resourceVersion": str(revision)}
    return respond(render_list(view, request, objects, list_meta))


def render_list(view: KubeView, request: Request, objects: list[Obj], list_meta: Obj) -> Obj:
    rendering = view.rendering or ("", "")
    if rendering[0] == "Table":
        include = request.query_params.get("includeObject", "Metadata")
        return tables.table(view.rt, objects, rendering[1], list_meta, include)
    return {
        "apiVersion": view.rt.api_version,
        "kind": f"{view.rt.kind}List",
        "metadata": list_meta,
        "items": objects,
    }


def object_response(view: KubeView, request: Request, obj: Obj) -> Response:
    rendering = view.rendering or ("", "")
    if rendering[0] == "Table":
        include = request.query_params.get("includeObject", "Metadata")
        return respond(
            tables.table(
                view.rt,
                [obj],
                rendering[1],
                {"resourceVersion": obj["metadata"]["resourceVersion"]},
                include,
            )
        )
    return respond(obj)
