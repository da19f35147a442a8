"""Every endpoint declares who may call it, and every face checks that through one function.

The walk covers every HTTP URL pattern (through includes) and every websocket route; a route
that declares nothing fails here, by name. Then the same denial is asked of the API over HTTP
and over WebSocket, and each face is seen going through `registry.authorization.check`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.urls import URLPattern, URLResolver

from nodus_console import urls
from nodus_console.asgi import application
from nodus_console.routing import websocket_routes
from runtimes.accounts.tokens import create_token
from runtimes.api.base import KubeView
from runtimes.api.objects import CollectionView, ItemView, StatusView
from runtimes.api.watch_ws import WatchConsumer
from runtimes.console.consumers import ConsoleConsumer
from runtimes.registry import authorization
from runtimes.registry.authorization import WATCH, Access, declared
from runtimes.storage.models import Project, RevisionCounter
from tests.support.api import GV

# Django's own apps, which check their callers themselves.
UNDECLARED_NAMESPACES = {
    "admin": "Django admin: AdminSite.admin_view lets only active staff users in",
}
# Handlers that refuse every caller before any role applies, so they map no verb.
REFUSING_HANDLERS = {
    (StatusView, "DELETE"): "a subresource is never deleted: 405 MethodNotAllowed",
    (StatusView, "POST"): "a subresource is never created: 405 MethodNotAllowed",
}
HANDLERS = ("get", "post", "put", "patch", "delete")


def routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(route, callback) of every URL pattern, through includes; allow-listed apps skipped."""
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace in UNDECLARED_NAMESPACES:
                continue
            yield from routes(entry.url_patterns, route)
        else:
            assert isinstance(entry, URLPattern)
            yield route, entry.callback


def test_it_walks_every_route_of_the_site() -> None:
    found = dict(routes(urls.urlpatterns))
    assert f"{GV[1:]}/namespaces/<str:namespace>/<str:plural>" in found
    assert "p/<str:project>/runtimes/<str:name>/edit" in found
    assert "livez" in found
    assert "login" in found
    assert not any(route.startswith("admin/") for route in found)
    assert len(websocket_routes()) == 3


def test_every_url_declares_who_may_call_it() -> None:
    missing = [route for route, callback in routes(urls.urlpatterns) if declared(callback) is None]
    assert missing == []


def test_every_websocket_route_declares_who_may_call_it() -> None:
    missing = [str(p.pattern) for p in websocket_routes() if declared(p.callback) is None]
    assert missing == []


def test_every_declaration_without_a_role_says_why() -> None:
    callbacks = [c for _, c in routes(urls.urlpatterns)] + [p.callback for p in websocket_routes()]
    unexplained = [
        getattr(c, "__name__", repr(c))
        for c in callbacks
        if (access := declared(c)) is not None and access.level != "role" and not access.reason
    ]
    assert unexplained == []


def test_every_api_view_maps_each_method_it_serves_to_a_verb() -> None:
    unmapped = []
    for route, callback in routes(urls.urlpatterns):
        view = getattr(callback, "view_class", None)
        if view is None or not issubclass(view, KubeView) or view.access.level != "role":
            continue
        for handler in HANDLERS:
            method = handler.upper()
            served = hasattr(view, handler) and (view, method) not in REFUSING_HANDLERS
            if served and view.access.verb(method) is None:
                unmapped.append(f"{method} {route}")
    assert unmapped == []


def test_a_watch_needs_the_same_verb_over_http_and_websocket() -> None:
    assert WatchConsumer.access is CollectionView.access
    assert CollectionView.access.verb(WATCH) == "watch"
    assert CollectionView.access.verb("GET") == "list"
    assert ItemView.access.verb("HEAD") == "get"


@pytest.fixture
def secret(actors: dict[str, Any]) -> str:
    """A project bob (a viewer of demo) has no role in, and bob's token."""
    RevisionCounter.objects.get_or_create(pk=1)
    Project.objects.create(name="secret")
    return create_token(actors["bob"], "test")[1]


def api_socket(path: str, token: str) -> WebsocketCommunicator:
    headers = [
        (b"host", b"testserver"),
        (b"origin", b"http://testserver"),
        (b"authorization", f"Bearer {token}".encode()),
    ]
    return WebsocketCommunicator(application, path, headers=headers)


async def watch_over_websocket(path: str, token: str) -> tuple[dict[str, Any], int]:
    socket = api_socket(path, token)
    connected, _ = await socket.connect()
    assert connected
    frame = json.loads(await socket.receive_from(timeout=5))
    closed = await socket.receive_output(timeout=5)
    assert closed["type"] == "websocket.close"
    return frame, closed["code"]


def watch_over_http(path: str, token: str) -> Any:
    return Client().get(path, headers={"Authorization": f"Bearer {token}"})


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_a_viewer_is_refused_a_watch_alike_over_http_and_websocket(secret: str) -> None:
    path = f"{GV}/namespaces/secret/trainingruntimes?watch=1"
    over_http = await sync_to_async(watch_over_http)(path, secret)
    frame, code = await watch_over_websocket(path, secret)
    assert over_http.status_code == 403
    refused = json.loads(over_http.content)
    assert frame["type"] == "ERROR"
    assert code == 4403
    for key in ("kind", "reason", "code", "message", "details"):
        assert frame["object"][key] == refused[key]
    assert refused["message"] == (
        'trainingruntimes.nodus.dev is forbidden: User "bob" cannot watch resource '
        '"trainingruntimes" in API group "nodus.dev" in the namespace "secret"'
    )


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Access, str]]:
    """Every call of registry.authorization.check, as (declaration, method); still decides."""
    seen: list[tuple[Access, str]] = []
    real = authorization.check

    def spy(user: Any, access: Access, method: str, *args: Any, **kwargs: Any) -> None:
        seen.append((access, method))
        real(user, access, method, *args, **kwargs)

    monkeypatch.setattr(authorization, "check", spy)
    return seen


def session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_every_face_checks_through_the_one_function(
    actors: dict[str, Any], secret: str, checks: list[tuple[Access, str]]
) -> None:
    from runtimes.console.catalog import catalog
    from runtimes.console.runtime import runtime

    def http() -> None:
        client = Client()
        headers = {"Authorization": f"Bearer {secret}"}
        listed = client.get(f"{GV}/namespaces/demo/trainingruntimes", headers=headers)
        assert listed.status_code == 200
        client.force_login(actors["bob"])
        assert client.get("/").status_code == 200
        assert client.get("/p/secret/runtimes/x/overview").status_code == 404

    await sync_to_async(http)()
    assert (CollectionView.access, "GET") in checks
    assert (catalog.access, "GET") in checks  # type: ignore[attr-defined]
    assert (runtime.access, "GET") in checks  # type: ignore[attr-defined]

    checks.clear()
    await watch_over_websocket(f"{GV}/namespaces/secret/trainingruntimes?watch=1", secret)
    assert checks == [(CollectionView.access, WATCH)]

    checks.clear()
    cookie = await sync_to_async(session_cookie)(actors["bob"])
    console = WebsocketCommunicator(
        application,
        "/ws/console",
        headers=[(b"host", b"testserver"), (b"origin", b"http://testserver"), (b"cookie", cookie)],
    )
    assert (await console.connect())[0]
    await console.disconnect()
    assert checks == [(ConsoleConsumer.access, WATCH)]
