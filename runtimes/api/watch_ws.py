"""Watch over WebSocket: the HTTP watch's events, one JSON text frame each.

`GET /apis/nodus.dev/v1beta1/[namespaces/NS/]PLURAL?watch=1` upgraded to a WebSocket streams
exactly what the HTTP watch streams (same plan, same generator). Credentials: the session
(browser; `AuthMiddlewareStack`), an `Authorization: Bearer` header, or kube's subprotocol form
`base64url.bearer.authorization.k8s.io.<base64url token>` for clients that cannot set headers.
The origin is checked by `AllowedHostsOriginValidator` around every websocket route.
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

from runtimes.accounts import audit
from runtimes.accounts.origin import same_origin
from runtimes.accounts.throttling import bearer_user
from runtimes.api import viewpool
from runtimes.api.objects import CollectionView
from runtimes.api.requestinfo import kind_for
from runtimes.api.watchstream import WatchPlan, encoded, plan_watch, watch_events
from runtimes.apimachinery import errors
from runtimes.watch.guard import Credential

# A request that fails before streaming is accepted, answered with one ERROR event carrying the
# Status, and closed with code 4000 + the HTTP status (4401, 4403, 4422, 4429, ...), so clients see
# the same message an HTTP client would. A watch whose caller loses access while it runs (token
# revoked, role binding removed, user deactivated: `watch.guard`) ends the same way: its last
# event is the ERROR, and the close code 4401 or 4403. Failed tokens count against the client's
# address, as over HTTP (`accounts.throttling`).

log = logging.getLogger("nodus.watch")

TOKEN_PROTOCOL = "base64url.bearer.authorization.k8s.io."
NORMAL_CLOSURE = 1000
# A watch that ends with one of these Statuses closes with 4000 + its code, as a refused one.
CLOSING_CODES = frozenset({401, 403})


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
    # Who opened it, once known (the audit log names them, refused or not).
    caller: Any = None

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

    def _client(self) -> str:
        client = self.scope.get("client") or ("", 0)
        return str(client[0] or "")

    async def _user(self) -> tuple[Any, Credential] | None:
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
            found = await viewpool.run(bearer_user, token, self._client())
            return None if found is None else (found, Credential.bearer(token))
        user = self.scope.get("user") or AnonymousUser()
        if not user.is_authenticated or not same_origin(self.scope):
            return None
        return user, Credential.session(user, self.scope.get("session"))

    async def _plan(self) -> WatchPlan:
        kwargs = self.scope["url_route"]["kwargs"]
        namespace = kwargs.get("namespace")
        rt = kind_for(self.scope["path"], kwargs["plural"])
        if rt is None or (namespace is not None and not rt.namespaced):
            raise errors.path_not_found()
        query = QueryDict(self.scope.get("query_string", b"").decode("latin-1"))
        if query.get("watch", "").lower() not in {"1", "true"}:
            raise errors.bad_request(
                "only watches are served over WebSocket",
                fix="Add ?watch=1 to the URL, or use plain HTTP for other requests.",
            )
        caller = await self._user()
        if caller is None:
            raise errors.ApiError("Unauthorized", "Unauthorized")
        user, credential = caller
        self.caller = user
        table = None
        accept = self._header(b"accept")
        if "as=Table" in accept and "g=meta.k8s.io" in accept:
            table = "v1beta1" if "v=v1beta1" in accept and "v=v1;" not in accept else "v1"
        plan: WatchPlan = await viewpool.run(
            plan_watch, rt, user, self.access, namespace, query, table, credential
        )
        return plan

    async def connect(self) -> None:
        try:
            plan = await self._plan()
        except errors.ApiError as error:
            audit.record_websocket(self.scope, self.caller, error.code, "watch")
            await self.accept(self._chosen_protocol())
            await self.send(
                text_data=orjson.dumps({"type": "ERROR", "object": error.status()}).decode()
            )
            await self.close(4000 + error.code)
            return
        audit.record_websocket(self.scope, self.caller, 200, "watch")
        await self.accept(self._chosen_protocol())
        self.task = asyncio.create_task(self._pump(plan))

    async def _pump(self, plan: WatchPlan) -> None:
        code = NORMAL_CLOSURE
        try:
            async for event in watch_events(plan):
                await self.send(text_data=encoded(event).decode())
                if isinstance(event, bytes):
                    continue  # an object's event, never an ERROR
                if event["type"] == "ERROR" and event["object"].get("code") in CLOSING_CODES:
                    code = 4000 + int(event["object"]["code"])
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("websocket watch failed")
            error = errors.internal_error("the watch failed")
            await self.send(
                text_data=orjson.dumps({"type": "ERROR", "object": error.status()}).decode()
            )
        await self.close(code)

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
