"""Cookies set over TLS are Secure.

`manage.py serve` answers the console over plain HTTP on loopback and the same app over HTTPS.
Django's ``SESSION_COOKIE_SECURE`` and ``CSRF_COOKIE_SECURE`` are one switch for both
listeners: on, the HTTP console could never keep a session; off, a session made over HTTPS
would be sent over plain HTTP too. So the flag follows the request: every cookie a response
over TLS sets (the session, CSRF, messages) is marked Secure. HttpOnly and SameSite come from
the settings for both listeners.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from django.http import HttpRequest, HttpResponseBase

from runtimes.apimachinery.middleware import HybridMiddleware


class SecureCookiesMiddleware(HybridMiddleware):
    def _call(self, request: HttpRequest) -> Any:
        return secure_cookies(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        response: Awaitable[HttpResponseBase] = self.get_response(request)
        return secure_cookies(request, await response)


def secure_cookies(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if request.is_secure():
        for morsel in response.cookies.values():
            morsel["secure"] = True
    return response
