"""Bearer-token authentication for kubectl and scripts (sessions cover the browser).

Failed tokens count against the client's address (`accounts.throttling`): past the limit the
answer is 429 TooManyRequests with Retry-After, before the token is even looked up.
"""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from runtimes.accounts.throttling import bearer_user


def client_address(meta: Any) -> str:
    """The peer's address as daphne reports it (behind a proxy: run daphne with --proxy-headers)."""
    return str(meta.get("REMOTE_ADDR") or "")


class BearerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise exceptions.AuthenticationFailed("Authorization must be 'Bearer <token>'")
        user = bearer_user(token.strip(), client_address(request.META))
        if user is None:
            raise exceptions.AuthenticationFailed("Unauthorized")
        return user, token

    def authenticate_header(self, request: Request) -> str:
        # Presence of this header makes DRF answer 401 (not 403) to anonymous requests.
        return 'Bearer realm="nodus"'
