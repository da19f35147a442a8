"""Request ids, the access log line and metrics, body limits and last-resort API errors.

The access line is the one log line of a refusal (a CSRF failure adds its reason to it).

Every request gets an id: the `X-Request-Id` header, the `requestId` of any Status, and the
log line. API paths never leak a traceback: an unexpected exception becomes a 500 Status whose
requestId points at the logged traceback.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import LazyObject, empty

from runtimes.api import metrics
from runtimes.api.status import is_api_path, status_response
from runtimes.apimachinery import errors
from runtimes.apimachinery.errors import ApiError
from runtimes.apimachinery.middleware import HybridMiddleware

log = logging.getLogger("nodus.request")


class RequestIdMiddleware(HybridMiddleware):
    def _call(self, request: HttpRequest) -> Any:
        early = self._begin(request)
        if early is not None:
            return self._finish(request, early)
        return self._finish(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        early = self._begin(request)
        if early is not None:
            return self._finish(request, early)
        response: Awaitable[HttpResponseBase] = self.get_response(request)
        return self._finish(request, await response)

    def _begin(self, request: HttpRequest) -> HttpResponseBase | None:
        request.request_id = uuid.uuid4().hex  # type: ignore[attr-defined]
        request.started_at = time.monotonic()  # type: ignore[attr-defined]
        if is_api_path(request.path):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > settings.NODUS_MAX_BODY_BYTES:
                return status_response(request, too_large())
        return None

    def _finish(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        response["X-Request-Id"] = request.request_id  # type: ignore[attr-defined]
        seconds = time.monotonic() - request.started_at  # type: ignore[attr-defined]
        metrics.observe(request, response.status_code, seconds)
        elapsed = seconds * 1000
        user = known_user(request)
        who = user.get_username() if user is not None and user.is_authenticated else "-"
        refused = getattr(request, "refused", "")
        log.info(
            "%s %s %s %.1fms user=%s requestId=%s%s",
            request.method,
            request.get_full_path(),
            response.status_code,
            elapsed,
            who or "-",
            request.request_id,  # type: ignore[attr-defined]
            f" refused={refused!r}" if refused else "",
        )
        return response

    def process_exception(
        self, request: HttpRequest, exception: Exception
    ) -> HttpResponseBase | None:
        if not is_api_path(request.path):
            return None
        if isinstance(exception, ApiError):
            return status_response(request, exception)
        log.error(
            "unhandled error requestId=%s",
            getattr(request, "request_id", "-"),
            exc_info=exception,
        )
        return status_response(request, internal_error())


def known_user(request: HttpRequest) -> Any:
    """The user the request was already found to be, or None: never a lookup of its own.

    `request.user` is lazy: reading it looks the session up in the database, which on the async
    path raises `SynchronousOnlyOperation` (a refusal answered before any view ran, such as a
    CSRF failure or a 405 with an unknown session cookie, became a 500). The log line names the
    user only when a view or DRF already resolved them."""
    user = request.__dict__.get("user")
    if isinstance(user, LazyObject):
        wrapped = user._wrapped  # whether it was evaluated, without evaluating it
        user = None if wrapped is empty else wrapped
    return user if user is not None else request.__dict__.get("_acached_user")


def too_large() -> ApiError:
    limit = settings.NODUS_MAX_BODY_BYTES
    return ApiError(
        "RequestEntityTooLarge",
        f"Request entity too large: limit is {limit} bytes",
    )


def internal_error() -> ApiError:
    return errors.internal_error("the server could not handle the request; nothing was changed")
