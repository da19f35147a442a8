"""Websocket routes: the console's live updates and the API watch over WebSocket.

Each consumer module adds its routes here; origin and session are checked for all of them.
"""

from __future__ import annotations

from typing import Any

from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.sessions import CookieMiddleware, SessionMiddleware


def websocket_routes() -> list[Any]:
    from runtimes.api.watch_ws import websocket_urlpatterns as api_watch
    from runtimes.console.consumers import websocket_urlpatterns as console_live

    return [*api_watch, *console_live]


def websocket_application() -> Any:
    from runtimes.accounts.oidcsession import GroupsAuthMiddleware

    # Channels' AuthMiddlewareStack, with the groups an OIDC sign-in kept in the session.
    stack = CookieMiddleware(SessionMiddleware(GroupsAuthMiddleware(URLRouter(websocket_routes()))))
    return AllowedHostsOriginValidator(stack)
