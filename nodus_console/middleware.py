"""Django's middleware, with its hooks run on the event loop for API requests.

Served async, Django runs a middleware's `process_request` and `process_response` through
`sync_to_async`, each on the thread it makes for the request: for an API GET that was more time
than the view. These hooks only look at the request and set headers and cookies, except a
session's save, so for API paths (`runtimes.api.status.is_api_path`) the wrappers call them
directly; a session that was changed is still saved on a thread. Console pages go through the
wrapped middleware exactly as Django would run it. The settings list these in Django's order.
"""

from __future__ import annotations

from typing import Any, ClassVar

from asgiref.sync import markcoroutinefunction, sync_to_async
from channels.db import database_sync_to_async
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CSPMiddleware
from django.conf import settings
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.gzip import GZipMiddleware
from django.middleware.security import SecurityMiddleware

from runtimes.accounts.oidcsession import GroupsAuthenticationMiddleware
from runtimes.api.status import is_api_path

# `Compression` is the exception: it gzips console pages (HTML, pages and htmx partials alike)
# and leaves API responses as they are, so kubectl and the watch streams see what they always did.


class InlineForApi:
    """Wraps `wrapped` (a Django middleware with request/response hooks)."""

    sync_capable = False
    async_capable = True
    wrapped: ClassVar[type]

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.inner = self.wrapped(get_response)
        markcoroutinefunction(self)

    def needs_thread(self, request: HttpRequest) -> bool:
        """Whether this response's hook does I/O (and so must run on a thread)."""
        return False

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not is_api_path(request.path):
            response: HttpResponseBase = await self.inner(request)
            return response
        early = getattr(self.inner, "process_request", None)
        answer = early(request) if early is not None else None
        if answer is None:
            answer = await self.get_response(request)
        late = getattr(self.inner, "process_response", None)
        if late is None:
            return answer
        if self.needs_thread(request):
            # A session's save: on asgiref's thread, its connection checked before and after
            # (an API request sends no request signals: `nodus_console.asgi.Handler`).
            result: HttpResponseBase = await database_sync_to_async(late)(request, answer)
            return result
        return late(request, answer)  # type: ignore[no-any-return]


class Security(InlineForApi):
    wrapped = SecurityMiddleware


class ContentSecurityPolicy(InlineForApi):
    """django-csp builds the policy's text anew for every response, for the nonce a page may
    ask for. An API answer renders no page and asks for no nonce, so its policy is the same
    text every time: built by django-csp for the first API answer, then copied onto each."""

    wrapped = CSPMiddleware

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        self.api_headers: list[tuple[str, str]] | None = None

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if settings.DEBUG or not is_api_path(request.path):
            return await super().__call__(request)
        if self.api_headers is None:
            response = await super().__call__(request)
            headers = [(h, response[h]) for h in (HEADER, HEADER_REPORT_ONLY) if h in response]
            if headers:
                self.api_headers = headers
            return response
        response = await self.get_response(request)
        for header, value in self.api_headers:
            if header not in response:
                response[header] = value
        return response


class Sessions(InlineForApi):
    wrapped = SessionMiddleware

    def needs_thread(self, request: HttpRequest) -> bool:
        session = getattr(request, "session", None)
        return bool(
            session is not None
            and (getattr(session, "modified", False) or settings.SESSION_SAVE_EVERY_REQUEST)
        )


class Common(InlineForApi):
    wrapped = CommonMiddleware


class Csrf(InlineForApi):
    wrapped = CsrfViewMiddleware

    async def process_view(
        self, request: HttpRequest, view: Any, args: Any, kwargs: Any
    ) -> HttpResponseBase | None:
        if is_api_path(request.path):
            return self.inner.process_view(request, view, args, kwargs)  # type: ignore[no-any-return]
        result: HttpResponseBase | None = await sync_to_async(self.inner.process_view)(
            request, view, args, kwargs
        )
        return result


class Authentication(InlineForApi):
    # Django's, plus the groups an OIDC sign-in stored in the session (accounts.oidcsession).
    wrapped = GroupsAuthenticationMiddleware


class Messages(InlineForApi):
    wrapped = MessageMiddleware


class FrameOptions(InlineForApi):
    wrapped = XFrameOptionsMiddleware


class HtmlGZipMiddleware(GZipMiddleware):
    """Django's gzip (which pads each body with random bytes against BREACH), for HTML only:
    static files come compressed from WhiteNoise, downloads are left as they are."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if not response.get("Content-Type", "").startswith("text/html"):
            return response
        return super().process_response(request, response)  # type: ignore[no-any-return]


class Compression(InlineForApi):
    wrapped = HtmlGZipMiddleware

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if is_api_path(request.path):
            response: HttpResponseBase = await self.get_response(request)
            return response
        return await super().__call__(request)
