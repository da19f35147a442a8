"""core/v1 Namespaces: the projects, read-only, as `kubectl get ns` and clients expect them.

A project is a namespace. The API serves them for reading only (get and list, JSON or Table):
projects are created and deleted by platform admins in the console or with `manage.py
createproject`, never through the API, so every write answers 405 MethodNotAllowed with the
message kube-apiserver gives for a verb a resource does not serve. A list holds the projects
the caller may read (`accounts.access.readable_projects`); a get answers for any project,
since project names are no secret to signed-in users (kubectl asks for the namespace after any
404 in it, and base.py's `namespaces "x" not found` already tells them apart).
"""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.accounts import access
from runtimes.api import tables
from runtimes.api.base import KubeView, respond
from runtimes.api.listoptions import selection
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import Obj
from runtimes.registry import authorization
from runtimes.registry.kinds import NAMESPACES
from runtimes.registry.namespace.schema import namespace_object
from runtimes.storage import store
from runtimes.storage.models import Project


class _NamespaceBase(KubeView):
    renderings = ("Table",)
    rt = NAMESPACES

    def refuse_unservable(self, request: Request) -> None:
        watch = request.query_params.get("watch", "").lower() in ("1", "true")
        if request.method not in ("GET", "HEAD") or watch:
            # No watch either: projects change outside the store, with no revisions to follow.
            raise errors.method_not_served()

    def table(self, request: Request, objects: list[Obj], list_meta: Obj) -> Response | None:
        """The Table kubectl asks for (NAME STATUS AGE), or None for plain JSON."""
        rendering = self.rendering or ("", "")
        if rendering[0] != "Table":
            return None
        include = request.query_params.get("includeObject") or "Metadata"
        if include not in ("None", "Metadata", "Object"):
            raise errors.bad_request(f'unrecognized includeObject value: "{include}"')
        return respond(tables.table(NAMESPACES, objects, rendering[1], list_meta, include))


class NamespaceListView(_NamespaceBase):
    access = authorization.signed_in("lists only the projects the caller may read")

    def get(self, request: Request) -> Response:
        readable = access.readable_projects(request.user)
        projects = Project.objects.order_by("name")
        if readable is not None:
            projects = projects.filter(name__in=readable)
        objects = [namespace_object(p) for p in projects]
        query = request.query_params
        chosen = selection(
            NAMESPACES, query.get("labelSelector", ""), query.get("fieldSelector", "")
        )
        objects = [obj for obj in objects if chosen.matches(obj)]
        list_meta = {"resourceVersion": str(store.current_revision())}
        as_table = self.table(request, objects, list_meta)
        if as_table is not None:
            return as_table
        return respond(
            {"kind": "NamespaceList", "apiVersion": "v1", "metadata": list_meta, "items": objects}
        )


class NamespaceView(_NamespaceBase):
    access = authorization.signed_in("project names are no secret to signed-in users")

    def get(self, request: Request, name: str) -> Response:
        project = Project.objects.filter(name=name).first()
        if project is None:
            raise errors.namespace_not_found(name)
        obj = namespace_object(project)
        return self.table(request, [obj], {}) or respond(obj)
