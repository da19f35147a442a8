"""Renders an `ApiError` as a metav1.Status response with docs, fix and requestId."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse

from runtimes.apimachinery.errors import ApiError

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


def is_api_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in API_PREFIXES)


def docs_url(request: HttpRequest, reason: str) -> str:
    return request.build_absolute_uri(f"/docs/errors/{reason}")


def status_body(request: HttpRequest, error: ApiError) -> dict[str, Any]:
    body = error.status()
    body["docs"] = docs_url(request, error.reason)
    body["requestId"] = getattr(request, "request_id", "")
    return body


def status_response(request: HttpRequest, error: ApiError) -> HttpResponse:
    response = HttpResponse(
        orjson.dumps(status_body(request, error)),
        status=error.code,
        content_type="application/json",
    )
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response
