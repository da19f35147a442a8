"""`/openapi/v3` and its one group-version document, with kube-openapi's caching headers.

kubectl keeps the document in its HTTP cache keyed by the `?hash=` URL the index hands out, so a
matching hash is served as immutable for a year, and a stale one is redirected (301) to the
current hash: a schema change is picked up on the next command without a cache flush
(kube-openapi `pkg/handler3/handler.go`). `/openapi/v2` is not served (404): kubectl tolerates
that because our PATCH operation declares `fieldValidation`.
"""

from __future__ import annotations

import time

from django.http import HttpResponse, HttpResponseBase, HttpResponsePermanentRedirect
from django.utils.http import http_date
from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.api.base import KubeView, respond
from runtimes.registry import authorization, openapi

ONE_YEAR_SECONDS = 365 * 24 * 3600


# The schema of the kinds, for `kubectl explain` and `apply`: no object is in it.
SCHEMA = authorization.signed_in("the kinds' schema, never an object")


class OpenAPIIndexView(KubeView):
    access = SCHEMA

    def get(self, request: Request) -> Response:
        response = respond(openapi.openapi_v3_discovery())
        # The index names the current hash, so it must never be served from a cache.
        response["Cache-Control"] = "no-cache, private"
        return response


class OpenAPIGroupVersionView(KubeView):
    access = SCHEMA

    def get(self, request: Request) -> HttpResponseBase:
        current = openapi.openapi_v3_hash()
        wanted = request.query_params.get("hash")
        if wanted is not None and wanted != current:
            return HttpResponsePermanentRedirect(f"/openapi/v3/{openapi.GV_PATH}?hash={current}")
        etag = f'"{current}"'
        if etag in [t.strip() for t in request.META.get("HTTP_IF_NONE_MATCH", "").split(",")]:
            response: HttpResponse = HttpResponse(status=304)
        else:
            response = HttpResponse(openapi.openapi_v3_bytes(), content_type="application/json")
        response["Etag"] = etag
        if wanted is not None:
            # Accept picks the encoding (JSON here, protobuf for kube), so caches key on it.
            response["Vary"] = "Accept"
            response["Cache-Control"] = "public, immutable"
            response["Expires"] = http_date(time.time() + ONE_YEAR_SECONDS)
        return response
