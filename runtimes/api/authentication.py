"""Bearer-token authentication for kubectl and scripts (sessions cover the browser)."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from runtimes.accounts.tokens import user_for


class BearerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, str] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise exceptions.AuthenticationFailed("Authorization must be 'Bearer <token>'")
        user = user_for(token.strip())
        if user is None:
            raise exceptions.AuthenticationFailed("Unauthorized")
        return user, token

    def authenticate_header(self, request: Request) -> str:
        # Presence of this header makes DRF answer 401 (not 403) to anonymous requests.
        return 'Bearer realm="nodus"'
