"""A console session signed in through OIDC keeps the ID token's groups, so role bindings to
groups apply to the console's pages as they do to the API.

The groups are stored in the session at sign-in (`SESSION_GROUPS`) and put on the session's
user each time it is loaded (`GroupsAuthenticationMiddleware`, Django's own with that one step
added; `GroupsAuthMiddleware` for the websockets, Channels' own with the same step), the same
attribute `accounts.access.groups_of` reads from an ID token's caller.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from channels.auth import AuthMiddleware
from channels.db import database_sync_to_async
from django.contrib import auth
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

SESSION_GROUPS = "nodus_oidc_groups"


def _with_groups(user: Any, groups: Any) -> Any:
    if groups and user.is_authenticated:
        user.nodus_groups = tuple(str(group) for group in groups)
    return user


def _get_user(request: HttpRequest) -> Any:
    if not hasattr(request, "_cached_user"):
        user = auth.get_user(request)
        request._cached_user = _with_groups(user, request.session.get(SESSION_GROUPS))  # type: ignore[attr-defined]
    return request._cached_user  # type: ignore[attr-defined]


async def _auser(request: HttpRequest) -> Any:
    if not hasattr(request, "_acached_user"):
        user = await auth.aget_user(request)
        groups = await request.session.aget(SESSION_GROUPS)
        request._acached_user = _with_groups(user, groups)  # type: ignore[attr-defined]
    return request._acached_user  # type: ignore[attr-defined]


class GroupsAuthenticationMiddleware(AuthenticationMiddleware):
    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _get_user(request))  # type: ignore[assignment]
        request.auser = partial(_auser, request)  # type: ignore[attr-defined]


class GroupsAuthMiddleware(AuthMiddleware):  # type: ignore[misc]
    """Channels' session user for websockets, with the session's OIDC groups."""

    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        await super().resolve_scope(scope)
        session = scope.get("session")
        if session is not None:
            groups = await database_sync_to_async(session.get)(SESSION_GROUPS)
            _with_groups(scope["user"], groups)
