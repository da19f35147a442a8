"""Watch over WebSocket: the HTTP watch's events, one JSON text frame each.

`GET /apis/nodus.dev/v1beta1/[namespaces/NS/]PLURAL?watch=1` upgraded to a WebSocket streams
exactly what the HTTP watch streams (same plan, same generator). Credentials: the session
(browser; `AuthMiddlewareStack`), an `Authorization: Bearer` header, or kube's subprotocol form
`base64url.bearer.authorization.k8s.io.<base64url token>` for clients that cannot set headers.
The origin is checked by `AllowedHostsOriginValidator` around every websocket route.

A request that fails before streaming is accepted, answered with one ERROR event carrying the
Status, and closed with code 4000 + the HTTP status (4401, 4403, 4422, ...), so clients see
the same message an HTTP client would.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from typing import Any

import orjson
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.http import QueryDict
from django.urls import re_path

from runtimes.accounts.origin import same_origin
from runtimes.accounts.tokens import user_for
from runtimes.api.objects import CollectionView
from runtimes.api.watchstream import WatchPlan, plan_watch, watch_events
from runtimes.apimachinery import errors
from runtimes.registry.kinds import lookup
from runtimes.watch.hub import run_db

log = logging.getLogger("nodus.watch")

TOKEN_PROTOCOL = "base64url.bearer.authorization.k8s.io."
NORMAL_CLOSURE = 1000


def _token_from_protocol(protocol: str) -> str | None:
    encoded = protocol[len(TOKEN_PROTOCOL) :]
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


class WatchConsumer(AsyncWebsocketConsumer):
    # The collection's own declaration: a WebSocket serves its WATCH, as the HTTP watch does.
    access = CollectionView.access
    task: asyncio.Task[None] | None = None

    def _header(self, name: bytes) -> str:
        for key, value in self.scope.get("headers", []):
            if key.lower() == name:
                return str(value.decode("latin-1"))
        return ""

    def _offered(self) -> list[str]:
        return list(self.scope.get("subprotocols") or [])

    def _chosen_protocol(self) -> str | None:
        """Echo a real protocol the client offered; never the one carrying the token."""
        others = [p for p in self._offered() if not p.startswith(TOKEN_PROTOCOL)]
        return others[0] if others else None

    async def _user(self) -> Any:
        header = self._header(b"authorization")
        token: str | None = None
        if header:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer":
                return None
            token = value.strip()
        else:
            for protocol in self._offered():
                if protocol.startswith(TOKEN_PROTOCOL):
                    token = _token_from_protocol(protocol)
                    if token is None:
                        return None
        if token is not None:
            return await run_db(user_for, token)
        user = self.scope.get("user") or AnonymousUser()
        if not user.is_authenticated or not same_origin(self.scope):
            return None
        return user

    async def _plan(self) -> WatchPlan:
        kwargs = self.scope["url_route"]["kwargs"]
        namespace = kwargs.get("namespace")
        rt = lookup(kwargs["plural"])
        if rt is None or (namespace is not None and not rt.namespaced):
            raise errors.ApiError("NotFound", "the server could not find the requested resource")
        query = QueryDict(self.scope.get("query_string", b"").decode("latin-1"))
        if query.get("watch", "").lower() not in {"1", "true"}:
            raise errors.bad_request(
                "only watches are served over WebSocket",
                fix="Add ?watch=1 to the URL, or use plain HTTP for other requests.",
            )
        user = await self._user()
        if user is None:
            raise errors.ApiError("Unauthorized", "Unauthorized")
        table = None
        accept = self._header(b"accept")
        if "as=Table" in accept and "g=meta.k8s.io" in accept:
            table = "v1beta1" if "v=v1beta1" in accept and "v=v1;" not in accept else "v1"
        plan: WatchPlan = await run_db(plan_watch, rt, user, self.access, namespace, query, table)
        return plan

    async def connect(self) -> None:
        try:
            plan = await self._plan()
        except errors.ApiError as error:
            await self.accept(self._chosen_protocol())
            await self.send(
                text_data=orjson.dumps({"type": "ERROR", "object": error.status()}).decode()
            )
            await self.close(4000 + error.code)
            return
        await self.accept(self._chosen_protocol())
        self.task = asyncio.create_task(self._pump(plan))

    async def _pump(self, plan: WatchPlan) -> None:
        try:
            async for event in watch_events(plan):
                await self.send(text_data=orjson.dumps(event).decode())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("websocket watch failed")
            error = errors.ApiError("InternalError", "Internal error occurred: the watch failed")
            await self.send(
                text_data=orjson.dumps({"type": "ERROR", "object": error.status()}).decode()
            )
        await self.close(NORMAL_CLOSURE)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        return None  # a watch only speaks; anything the client says is ignored

    async def disconnect(self, code: int) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task


GV = r"^/?apis/nodus\.dev/v1beta1"

websocket_urlpatterns = [
    re_path(GV + r"/namespaces/(?P<namespace>[^/]+)/(?P<plural>[^/]+)$", WatchConsumer.as_asgi()),
    re_path(GV + r"/(?P<plural>[^/]+)$", WatchConsumer.as_asgi()),
]
