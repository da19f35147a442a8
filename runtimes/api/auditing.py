"""The audit middleware: one audit.k8s.io/v1 Event per API request, console write and refusal.

Audited: every request to the API (`/api`, `/apis`), every console request that is not a read
(POST and the like, the sign-in included), and every 401, 403 and 429 on any path. Health,
metrics and static files are not. The event is built when the response is ready and handed to
the audit log's queue (`accounts.auditlog`): nothing here waits for a disk. On the async path
the caller is loaded with `auser`, never by touching the lazy `request.user`, which would query
the database on the event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import SimpleLazyObject, empty

from runtimes.accounts import audit, auditlog
from runtimes.accounts.access import User
from runtimes.api import metrics
from runtimes.api.authentication import client_address
from runtimes.api.requestinfo import group_of
from runtimes.api.status import is_api_path
from runtimes.apimachinery.middleware import HybridMiddleware

REFUSALS = frozenset({401, 403, 429})
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
UNAUDITED_PREFIXES = ("/static/", "/livez", "/readyz", "/healthz", "/metrics", "/favicon")


def wanted(request: HttpRequest, code: int) -> bool:
    if code in REFUSALS:
        return True
    if request.path.startswith(UNAUDITED_PREFIXES):
        return False
    return is_api_path(request.path) or request.method not in READ_METHODS


def _loaded_user(request: HttpRequest) -> User | None:
    """The caller if it is already known (DRF set it, or a view loaded the session's)."""
    user = getattr(request, "user", None)
    if isinstance(user, SimpleLazyObject) and user._wrapped is empty:  # type: ignore[attr-defined]
        return None
    return user  # type: ignore[no-any-return]


def build(request: HttpRequest, user: User | None, code: int) -> dict[str, Any]:
    match = getattr(request, "resolver_match", None)
    kwargs = match.kwargs if match is not None else {}
    annotations: dict[str, str] = {}
    if is_api_path(request.path):
        verb, resource, subresource = metrics.classify(request)
        group = group_of(request.path) or ""
        parts = request.path.lstrip("/").split("/")
        version = (parts[1] if group == "" else parts[2]) if len(parts) > 2 else ""
        ref = audit.object_ref(
            resource,
            str(kwargs.get("namespace", "")),
            str(kwargs.get("name", "")),
            group,
            version,
            subresource,
        )
        verb = verb.lower()
    else:
        # A console page: its project and object from the URL, its view as an annotation.
        verb = (request.method or "GET").lower()
        ref = audit.object_ref(
            "", str(kwargs.get("project", "")), str(kwargs.get("name", "")), "", "", ""
        )
        if match is not None and match.url_name:
            annotations["nodus.dev/console-view"] = match.url_name
    return audit.event(
        audit_id=getattr(request, "request_id", ""),
        verb=verb,
        user=audit.user_info(user),
        request_uri=request.get_full_path(),
        code=code,
        received=getattr(request, "received_at", "") or audit.timestamp(),
        ref=ref,
        source_ips=[client_address(request.META)],
        user_agent=str(request.META.get("HTTP_USER_AGENT", "")),
        annotations=annotations,
    )


class AuditMiddleware(HybridMiddleware):
    def _call(self, request: HttpRequest) -> Any:
        request.received_at = audit.timestamp()  # type: ignore[attr-defined]
        response: HttpResponseBase = self.get_response(request)
        if wanted(request, response.status_code):
            user = getattr(request, "user", None)
            auditlog.emit(build(request, user, response.status_code))
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        request.received_at = audit.timestamp()  # type: ignore[attr-defined]
        pending: Awaitable[HttpResponseBase] = self.get_response(request)
        response = await pending
        if wanted(request, response.status_code):
            user = _loaded_user(request)
            if user is None and hasattr(request, "auser"):
                user = await request.auser()
                # Loaded now: later readers of `request.user` (the access log) need no query.
                request.user = user
            auditlog.emit(build(request, user, response.status_code))
        return response
