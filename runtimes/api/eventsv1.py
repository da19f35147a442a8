"""events.k8s.io/v1 Events: the core/v1 Events, read through the newer API's shape.

kube-apiserver serves both versions from one storage; so do we: these views read the core
kind (`registry.kinds.EVENTS`) through the same list machinery (snapshots, paging, the
readable projects) and convert each object (`registry.event.conversion.to_v1`). Field selectors
use this version's labels (`regarding.name`, `reportingController`, ...), translated to the
core ones as kube's field label conversion does. Get and list only: no watch here (core/v1
events watch), and no writes (Events are the controller's).
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.api import listing, tables
from runtimes.api.base import KubeView, respond
from runtimes.api.listoptions import parse_list_options
from runtimes.apimachinery import errors
from runtimes.apimachinery.selectors import SelectorError, parse_field_selector
from runtimes.apimachinery.selectors.fields import FieldTerm
from runtimes.registry import authorization
from runtimes.registry.event.conversion import to_v1
from runtimes.registry.event.schema import V1_FIELD_LABELS
from runtimes.registry.kinds import EVENTS, EVENTS_V1
from runtimes.storage import store


def core_field_selector(text: str) -> str:
    """This version's field selector in the core kind's labels (400 for any other label)."""
    try:
        selector = parse_field_selector(text, V1_FIELD_LABELS)
    except SelectorError as exc:
        raise errors.bad_request(
            str(exc),
            fix="events.k8s.io/v1 selects on " + ", ".join(V1_FIELD_LABELS) + ".",
        ) from None
    return ",".join(
        str(FieldTerm(V1_FIELD_LABELS[t.field], t.value, t.negated)) for t in selector.terms
    )


class _EventsView(KubeView):
    renderings = ("Table",)
    rt = EVENTS_V1

    def refuse_unservable(self, request: Request) -> None:
        watch = request.query_params.get("watch", "").lower() in ("1", "true")
        if request.method not in ("GET", "HEAD") or watch:
            raise errors.method_not_served()

    def table(self, request: Request, core: list[Any], list_meta: dict[str, Any]) -> Response:
        include = request.query_params.get("includeObject") or "Metadata"
        if include not in ("None", "Metadata", "Object"):
            raise errors.bad_request(f'unrecognized includeObject value: "{include}"')
        version = (self.rendering or ("", "v1"))[1]
        made = tables.table(EVENTS_V1, core, version, list_meta, include)
        if include == "Object":  # the rows' objects in this version's shape
            for row, obj in zip(made["rows"], core, strict=True):
                row["object"] = to_v1(obj)
        return respond(made)

    def as_table(self) -> bool:
        return (self.rendering or ("", ""))[0] == "Table"


class EventListView(_EventsView):
    access = authorization.role({"GET": "list"}, EVENTS_V1)

    def get(self, request: Request, namespace: str | None = None) -> Response:
        query = request.query_params.copy()
        query["fieldSelector"] = core_field_selector(query.get("fieldSelector", ""))
        namespaces = listing.readable_namespaces(EVENTS, request.user, namespace)
        opts = parse_list_options(EVENTS, query, namespaces)
        page = listing.list_page(EVENTS, namespace, opts)
        if self.as_table():
            return self.table(request, page.items, page.list_meta())
        body = {
            "kind": "EventList",
            "apiVersion": EVENTS_V1.api_version,
            "metadata": page.list_meta(),
            "items": [to_v1(obj) for obj in page.items],
        }
        return respond(orjson.Fragment(orjson.dumps(body)))


class EventView(_EventsView):
    access = authorization.role({"GET": "get"}, EVENTS_V1)

    def get(self, request: Request, namespace: str, name: str) -> Response:
        try:
            obj = store.get(EVENTS, namespace, name)
        except errors.ApiError as exc:
            if exc.reason == "NotFound":
                store.ensure_namespace(EVENTS, namespace)
                raise errors.not_found(EVENTS_V1.plural, EVENTS_V1.group, name) from None
            raise
        if self.as_table():
            return self.table(
                request, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]}
            )
        return respond(to_v1(obj))
