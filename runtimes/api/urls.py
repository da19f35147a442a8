"""URL shapes exactly as kube-apiserver's, for every registered kind."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from runtimes.api import (
    access_review,
    compile_view,
    discovery,
    eventsv1,
    health_views,
    namespaces,
    objects,
    openapi_views,
    whoami,
)
from runtimes.api.status import status_response
from runtimes.api.viewpool import pooled
from runtimes.apimachinery import errors
from runtimes.apimachinery.meta import API_VERSION, GROUP
from runtimes.registry import authorization
from runtimes.registry.event.schema import EVENTS_GROUP

GV = f"apis/{API_VERSION}"
# The core group: Events (the controller's), and Namespaces (the projects) by their own views.
CORE = "api/v1"

_collection = objects.CollectionView.as_view()
_pooled_item = pooled(objects.ItemView.as_view())


def _is_watch(request: HttpRequest) -> bool:
    return request.GET.get("watch", "").lower() in {"1", "true"}


@csrf_exempt
@authorization.declare(objects.CollectionView.access)
async def collection(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
    """Watches stream from an async generator; everything else is an ordinary DRF view."""
    if request.method == "GET" and _is_watch(request):
        from runtimes.api.watch import watch

        return await watch(request, objects.CollectionView.access, **kwargs)
    return await _pooled_collection(request, **kwargs)


_pooled_collection = pooled(_collection)


@csrf_exempt
@authorization.declare(objects.CollectionView.access)
async def legacy_watch(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
    """kube's deprecated watch paths, `/apis/GROUP/VERSION/watch/...`: the collection's watch,
    one name's with `metadata.name=NAME` added to the field selector."""
    from runtimes.api.watch import watch

    query = request.GET.copy()
    query["watch"] = "true"
    name = kwargs.pop("name", None)
    if name is not None:
        given = query.get("fieldSelector", "")
        query["fieldSelector"] = f"metadata.name={name}" + (f",{given}" if given else "")
    query._mutable = False
    request.GET = query  # type: ignore[assignment]  # made read-only again just above
    if request.method != "GET":  # these paths only watch: never a write through them
        return status_response(
            request,
            errors.method_not_served(),
        )
    return await watch(request, objects.CollectionView.access, **kwargs)


@csrf_exempt
@authorization.declare(objects.ItemView.access)
async def item(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
    """The DRF view, on the pool (`viewpool`)."""
    return await _pooled_item(request, **kwargs)


urlpatterns = [
    path("version", discovery.VersionView.as_view()),
    path("version/", discovery.VersionView.as_view()),
    # `/api/` and `/apis/` (kr8s asks for /api/) reach these trimmed (requestinfo.TrimmedPath).
    path("api", discovery.CoreDiscoveryView.as_view()),
    path(CORE, discovery.CoreVersionView.as_view()),
    path(f"{CORE}/namespaces", namespaces.NamespaceListView.as_view()),
    path(f"{CORE}/namespaces/<str:name>", namespaces.NamespaceView.as_view()),
    path(f"{CORE}/watch/namespaces/<str:namespace>/<str:plural>", legacy_watch),
    path(f"{CORE}/watch/<str:plural>", legacy_watch),
    path(f"{CORE}/namespaces/<str:namespace>/<str:plural>", collection),
    path(f"{CORE}/namespaces/<str:namespace>/<str:plural>/<str:name>", item),
    path(f"{CORE}/<str:plural>", collection),
    path("apis", discovery.GroupsDiscoveryView.as_view()),
    path(f"apis/{GROUP}", discovery.GroupView.as_view()),
    path(GV, discovery.GroupVersionView.as_view()),
    path(f"apis/{EVENTS_GROUP}", discovery.GroupView.as_view(group=EVENTS_GROUP, version="v1")),
    path(
        f"apis/{EVENTS_GROUP}/v1",
        discovery.GroupVersionView.as_view(group=EVENTS_GROUP, version="v1"),
    ),
    path(f"apis/{EVENTS_GROUP}/v1/events", eventsv1.EventListView.as_view()),
    path(
        f"apis/{EVENTS_GROUP}/v1/namespaces/<str:namespace>/events",
        eventsv1.EventListView.as_view(),
    ),
    path(
        f"apis/{EVENTS_GROUP}/v1/namespaces/<str:namespace>/events/<str:name>",
        eventsv1.EventView.as_view(),
    ),
    path(f"apis/{access_review.GROUP}", access_review.GroupView.as_view()),
    path(f"apis/{access_review.API_VERSION}", access_review.GroupVersionView.as_view()),
    path(
        f"apis/{access_review.API_VERSION}/{access_review.PLURAL}",
        access_review.SelfSubjectAccessReviewView.as_view(),
    ),
    path(
        f"apis/{access_review.API_VERSION}/{access_review.RULES_PLURAL}",
        access_review.SelfSubjectRulesReviewView.as_view(),
    ),
    path(f"apis/{whoami.API_VERSION}/{whoami.PLURAL}", whoami.SelfSubjectReviewView.as_view()),
    path(f"{GV}/watch/namespaces/<str:namespace>/<str:plural>", legacy_watch),
    path(f"{GV}/watch/namespaces/<str:namespace>/<str:plural>/<str:name>", legacy_watch),
    path(f"{GV}/watch/<str:plural>", legacy_watch),
    path(f"{GV}/watch/<str:plural>/<str:name>", legacy_watch),
    path(f"{GV}/namespaces/<str:namespace>/<str:plural>", collection),
    path(f"{GV}/namespaces/<str:namespace>/<str:plural>/<str:name>", item),
    path(
        f"{GV}/namespaces/<str:namespace>/<str:plural>/<str:name>/status",
        objects.StatusView.as_view(),
    ),
    path(f"{GV}/<str:plural>", collection),
    path(f"{GV}/<str:plural>/<str:name>", item),
    path(
        f"{GV}/namespaces/<str:namespace>/<str:plural>/<str:name>/compile",
        compile_view.CompileView.as_view(),
    ),
    # Any other subresource of a kind's object (after /status and /compile above).
    path(
        f"{GV}/namespaces/<str:namespace>/<str:plural>/<str:name>/<str:subresource>",
        objects.UnknownSubresourceView.as_view(),
    ),
    path(
        f"{GV}/<str:plural>/<str:name>/<str:subresource>", objects.UnknownSubresourceView.as_view()
    ),
    path("openapi/v3", openapi_views.OpenAPIIndexView.as_view()),
    path(f"openapi/v3/{GV}", openapi_views.OpenAPIGroupVersionView.as_view()),
    path("healthz", health_views.healthz),
    path("healthz/<str:name>", health_views.healthz_check),
    path("livez", health_views.livez),
    path("livez/<str:name>", health_views.livez_check),
    path("readyz", health_views.readyz),
    path("readyz/<str:name>", health_views.readyz_check),
    path("metrics", health_views.metrics),
    re_path(r"^(?:api|apis|openapi)(?:/.*)?$", csrf_exempt(discovery.unknown_path)),
]
