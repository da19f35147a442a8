"""Renders an `ApiError` as a metav1.Status response with docs, fix and requestId."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse

from runtimes.api.media import wants_yaml
from runtimes.apimachinery import yamlcodec
from runtimes.apimachinery.errors import ApiError
from runtimes.apimachinery.mediatypes import JSON, YAML

API_PREFIXES = (
    "/api",
    "/apis",
    "/openapi",
    "/version",
    "/healthz",
    "/livez",
    "/readyz",
    "/metrics",
)


_API_ROOTS = frozenset(prefix[1:] for prefix in API_PREFIXES)


def is_api_path(path: str) -> bool:
    """Whether `path` is one of API_PREFIXES or below one (`/apis/...`, not `/apisx`): its
    first segment, looked up once (every request asks, several times)."""
    return path.startswith("/") and path[1:].partition("/")[0] in _API_ROOTS


def docs_url(request: HttpRequest, reason: str) -> str:
    return request.build_absolute_uri(f"/docs/errors/{reason}")


def status_body(request: HttpRequest, error: ApiError) -> dict[str, Any]:
    body = error.status()
    body["docs"] = docs_url(request, error.reason)
    body["requestId"] = getattr(request, "request_id", "")
    return body


def status_response(request: HttpRequest, error: ApiError) -> HttpResponse:
    """The Status in JSON, or in YAML when that is what the caller accepts first (as kube)."""
    body = status_body(request, error)
    if wants_yaml(request):
        content, content_type = yamlcodec.dump(body).encode(), YAML
    else:
        content, content_type = orjson.dumps(body), JSON
    response = HttpResponse(content, status=error.code, content_type=content_type)
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response
