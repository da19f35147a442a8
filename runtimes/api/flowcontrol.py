"""API Priority and Fairness in front of everything: priority levels, fair queues, 429 last.

An ASGI middleware classifies each request (HTTP and websockets, API and console) before any
work is queued for it: its flow schema and priority level from who is asking (known from
memory only: no database call), its flow (the user, else the token, session or address), and
its width (a list takes more seats than a get). It then takes seats from `fairqueuing`, which
queues it fairly when its level is busy; only a full queue or a wait past the bound answers
429 with Retry-After, the Status kube-apiserver's API Priority and Fairness sends.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson
from django.conf import settings

from runtimes.accounts import access, tokens
from runtimes.api import fairqueuing, metrics
from runtimes.api.fairqueuing import (
    EXEMPT,
    GLOBAL_DEFAULT,
    QUEUE_FULL,
    WORKLOAD_HIGH,
    Dispatcher,
    Level,
    Refused,
    RetryAfter,
    Ticket,
)
from runtimes.apimachinery.errors import ApiError

# Flow schemas and priority levels, as kube's suggested configuration has them (trimmed to
# what this server sees):
#
# | flow schema | who | priority level |
# |---|---|---|
# | exempt | platform admins (staff) | exempt: never queued, never refused |
# | probes | /healthz, /livez, /readyz | exempt (answered before any of this) |
# | nodus-controller | the controller's service account | workload-high |
# | global-default | everyone else: a flow per user (or token, session, address) | global-default |
#
# A caller's user is known here only when their token was looked up a moment ago
# (`tokens.remembered`); until then they are global-default, one flow per token.
#
# Seats: the process has NODUS_FLOW_SEATS (24), shared by workload-high and global-default in
# proportion to their shares (40:20, kube's). A list (and a watch's initial list, until its
# response starts) is NODUS_FLOW_LIST_WIDTH seats wide (8, all of global-default's own; a
# request is never wider than its level's seats): each costs a thread of Python on one
# interpreter lock, and lists side by side only share it. A level may borrow seats no other
# level waits for, but not past its level's own seats for one flow, nor for a flow with a
# backlog (borrowing serves more flows, it does not multiply a greedy one): see
# `fairqueuing.Dispatcher._may_borrow`. A get or a write stays 1 wide. While another flow's
# light request (its flow had nothing else waiting) is in service, a backlogged flow's request
# in service gives way to it at each step (`fairqueuing.give_way`: before Django's middleware,
# before and after its view, on the view's thread before each query and its rendering, before
# its response), 50 ms at most each and 150 ms in all: seats bound how many run; giving way
# shares the loop and the interpreter lock.
# Queues: 128 per level (kube's), a flow dealt 6 of them (shuffle sharding), at most
# NODUS_FLOW_QUEUE_LENGTH (16) waiting in each (kube's 50 would let one flow park 300), and
# a wait of at most NODUS_FLOW_QUEUE_SECONDS (15: kube's, a quarter of its 60 s request timeout).
# A refusal's Retry-After is the level's, as kube's dropped-requests tracker sets it: 1 s, doubled
# (up to 32) while refusals keep coming, so the refused do not all come back at once. And a
# refusal made as a request arrives (its queue full) is answered after a random part of
# NODUS_FLOW_REFUSAL_SPREAD_SECONDS (1): a burst's refusals, all told the same Retry-After,
# came back in the same millisecond, and reading them stalled every other request on the loop
# (kube reads each connection on a core of its own and answers at once).
# An open watch holds no seat once it streams: it costs memory, bounded per watch by the
# listeners' unsent-bytes cut (`serving`) and in all by NODUS_MAX_WATCHES_INFLIGHT (1,000).
# Static files are exempt (served from memory).

log = logging.getLogger("nodus.flowcontrol")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LIST, WATCH, OTHER = "list", "watch", "other"
EXEMPT_PATHS = ("/healthz", "/livez", "/readyz")
EXEMPT_PREFIXES = ("/static/",)
TOKEN_PROTOCOL = "base64url.bearer.authorization.k8s.io."
TRUE = {"1", "true"}
EXECUTOR_RESERVE = 4
LEVELS = (Level(EXEMPT), Level(WORKLOAD_HIGH, shares=40), Level(GLOBAL_DEFAULT, shares=20))
SCHEMAS = {"exempt": EXEMPT, "nodus-controller": WORKLOAD_HIGH, "global-default": GLOBAL_DEFAULT}


def uid(kind: str, name: str) -> str:
    """A stable UID for a flow schema or priority level (kube sends theirs in headers)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"nodus:flowcontrol:{kind}/{name}"))


@dataclass(frozen=True)
class Limits:
    """The process's seats and queues (from settings unless given)."""

    seats: int = 24
    list_width: int = 8
    queue_length: int = 16
    queue_seconds: float = 15.0
    watches: int = 1000
    refusal_spread: float = 1.0

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            seats=int(settings.NODUS_FLOW_SEATS),
            list_width=int(settings.NODUS_FLOW_LIST_WIDTH),
            queue_length=int(settings.NODUS_FLOW_QUEUE_LENGTH),
            queue_seconds=float(settings.NODUS_FLOW_QUEUE_SECONDS),
            watches=int(settings.NODUS_MAX_WATCHES_INFLIGHT),
            refusal_spread=float(settings.NODUS_FLOW_REFUSAL_SPREAD_SECONDS),
        )

    def dispatcher(self) -> Dispatcher:
        levels = tuple(Level(lv.name, lv.shares, queue_length=self.queue_length) for lv in LEVELS)
        return Dispatcher(levels, self.seats, self.queue_seconds)


@dataclass(frozen=True)
class Demand:
    """What a request is: a list, a watch (which may list first) or anything else."""

    pool: str
    lists_first: bool = False


@dataclass(frozen=True)
class Flow:
    """Where a request goes: its flow schema, its priority level and its flow's name."""

    schema: str
    level: str
    distinguisher: str


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


def _query(scope: Scope) -> dict[str, list[str]]:
    return parse_qs(bytes(scope.get("query_string") or b"").decode("latin-1"))


def _is_collection(path: str) -> bool:
    """/apis/GROUP/VERSION/PLURAL or /apis/GROUP/VERSION/namespaces/NS/PLURAL."""
    parts = path.strip("/").split("/")
    if len(parts) < 4 or parts[0] != "apis":
        return False
    rest = parts[3:]
    return len(rest) == 1 or (len(rest) == 3 and rest[0] == "namespaces")


def _is_legacy_watch(path: str) -> bool:
    """/apis/GROUP/VERSION/watch/...: kube's deprecated watch paths (a collection or one name)."""
    parts = path.strip("/").split("/")
    return len(parts) >= 5 and parts[0] == "apis" and parts[3] == "watch"


def _lists_first(query: dict[str, list[str]]) -> bool:
    """Whether a watch starts with the current state (watchstream.plan_watch's rule)."""
    initial = (query.get("sendInitialEvents") or [""])[0].lower()
    if initial:
        return initial == "true"
    return (query.get("resourceVersion") or [""])[0] in {"", "0"}


def classify(scope: Scope) -> Demand | None:
    """The seats a request needs; None for an exempt one."""
    path = str(scope.get("path") or "/")
    if path in EXEMPT_PATHS or path.startswith(tuple(p + "/" for p in EXEMPT_PATHS)):
        return None
    if path.startswith(EXEMPT_PREFIXES):
        return None
    query = _query(scope)
    if scope["type"] == "websocket":
        return Demand(WATCH, lists_first=_is_collection(path) and _lists_first(query))
    method = str(scope.get("method") or "GET")
    if method in {"GET", "HEAD"} and _is_legacy_watch(path):
        return Demand(WATCH, lists_first=_lists_first(query))
    if method in {"GET", "HEAD"} and _is_collection(path):
        if (query.get("watch") or [""])[0].lower() in TRUE:
            return Demand(WATCH, lists_first=_lists_first(query))
        return Demand(LIST)
    return Demand(OTHER)


def is_exempt(scope: Scope) -> bool:
    return scope["type"] in {"http", "websocket"} and classify(scope) is None


def is_long_running(scope: Scope) -> bool:
    """Watches and websockets: they last as long as the client stays."""
    demand = classify(scope) if scope["type"] in {"http", "websocket"} else None
    return demand is not None and demand.pool == WATCH


def executor_threads() -> int:
    """The size of the event loop's default executor (watch set-up, event-log reads): as many
    lists as the seats allow, plus a reserve of 4, so the hub's reads always find a thread."""
    configured = int(settings.NODUS_ASGI_THREADS)
    limits = Limits.from_settings()
    return configured or limits.seats // max(limits.list_width, 1) + EXECUTOR_RESERVE


def _digest(kind: str, secret: str) -> str:
    return f"{kind}:{hashlib.sha256(secret.encode()).hexdigest()[:16]}"


def client_of(scope: Scope) -> str:
    """Who a request is from, without a database call: its bearer token (hashed; the token
    names one user), else its session cookie, else its address."""
    authorization = _header(scope, b"authorization")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return _digest("token", token.strip())
    for protocol in scope.get("subprotocols") or []:
        if protocol.startswith(TOKEN_PROTOCOL):
            return _digest("token", protocol[len(TOKEN_PROTOCOL) :])
    cookie_name = getattr(settings, "SESSION_COOKIE_NAME", "sessionid")
    for part in _header(scope, b"cookie").split(";"):
        name, _, value = part.strip().partition("=")
        if name == cookie_name and value:
            return _digest("session", value)
    client = scope.get("client") or ("unknown", 0)
    return f"address:{client[0]}"


def flow_of(scope: Scope) -> Flow:
    """The flow schema, priority level and flow of a request, from memory only."""
    client = client_of(scope)
    token = _bearer_token(scope)
    user = tokens.remembered(token) if token else None
    if user is not None:
        if access.is_platform_admin(user):
            return Flow("exempt", EXEMPT, user.get_username())
        if access.is_controller(user):
            return Flow("nodus-controller", WORKLOAD_HIGH, user.get_username())
        return Flow("global-default", GLOBAL_DEFAULT, f"user:{user.get_username()}")
    return Flow("global-default", GLOBAL_DEFAULT, client)


def _bearer_token(scope: Scope) -> str:
    scheme, _, token = _header(scope, b"authorization").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    for protocol in scope.get("subprotocols") or []:
        if protocol.startswith(TOKEN_PROTOCOL):
            return _decode_protocol_token(protocol[len(TOKEN_PROTOCOL) :])
    return ""


def _decode_protocol_token(encoded: str) -> str:
    import base64

    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def too_many_requests(why: str, retry_after: int) -> ApiError:
    return ApiError(
        "TooManyRequests",
        "Too many requests, please try again later.",
        retry_after=retry_after,
        fix=f"The server is at its limit ({why}). Retry after {retry_after} s (kubectl "
        "and client-go do), and send fewer requests at once: wait for one list before the next.",
    )


def status_bytes(scope: Scope, error: ApiError, request_id: str) -> bytes:
    """The Status body, with the docs and requestId every API error carries."""
    host = _header(scope, b"host") or "localhost"
    scheme = "https" if scope.get("scheme") in {"https", "wss"} else "http"
    body = error.status()
    body["docs"] = f"{scheme}://{host}/docs/errors/{error.reason}"
    body["requestId"] = request_id
    return orjson.dumps(body)


class FlowControl:
    """The ASGI middleware: ``FlowControl(app)``; limits from settings unless given, and the
    clock its Retry-After counts seconds by."""

    def __init__(
        self,
        app: ASGIApp,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.limits = limits or Limits.from_settings()
        self.dispatcher = self.limits.dispatcher()
        self.retry_after = RetryAfter(clock)
        self.watches = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        demand = classify(scope) if scope["type"] in {"http", "websocket"} else None
        if demand is None:
            await self.app(scope, receive, send)
            return
        flow = flow_of(scope)
        if demand.pool == WATCH and self.limits.watches and self.watches >= self.limits.watches:
            why = f"the server has {self.watches} watches open, its bound"
            await self._refuse(scope, receive, send, flow, "concurrency-limit", why, spread=True)
            return
        # A list, and a watch while it lists first, is wider than a get or a write; a watch
        # that starts from a revision holds no seat beyond its set-up's one.
        width = self.limits.list_width if demand.pool == LIST or demand.lists_first else 1
        granted = await self.dispatcher.acquire(
            flow.level,
            flow.distinguisher,
            width,
            lambda change: metrics.flow_queued(flow.level, flow.schema, change),
        )
        metrics.flow_wait(flow.level, flow.schema, granted)
        if isinstance(granted, Refused):
            # Refused as it came (its queue full), with the rest of a burst: spread.
            spread = granted.reason == QUEUE_FULL
            await self._refuse(scope, receive, send, flow, granted.reason, granted.detail, spread)
            return
        ticket: Ticket = granted
        watching = demand.pool == WATCH
        if watching:
            self.watches += 1
        metrics.flow_started(flow.level, flow.schema, ticket.width)
        headers = _flow_headers(flow)

        def free() -> None:
            if not ticket.released:
                self.dispatcher.release(ticket)
                metrics.flow_finished(flow.level, flow.schema, ticket.width)

        async def tracked(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start":
                await self.dispatcher.give_way(ticket)
                message = {**message, "headers": [*message.get("headers", []), *headers]}
            if watching and kind in {"http.response.start", "websocket.accept"}:
                free()  # a watch's set-up is done: it streams without a seat
            await send(message)
            if kind == "http.response.body" and not message.get("more_body", False):
                # The response is complete: its client may send the next request at once, while
                # Django still closes the request (signals, database connections). Counting
                # that tail would hold a seat for no work.
                free()

        seated = fairqueuing.serving(self.dispatcher, ticket)
        try:
            # Before Django's middleware runs for it: a step like the view's.
            await self.dispatcher.give_way(ticket)
            await self.app(scope, receive, tracked)
        finally:
            fairqueuing.served(seated)
            free()
            if watching:
                self.watches -= 1

    async def _refuse(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        flow: Flow,
        reason: str,
        why: str,
        spread: bool = False,
    ) -> None:
        """Answers 429; a `spread` refusal after a random part of the limits' spread, its
        Retry-After counted (kube's dropped-requests tracker) as it was refused."""
        request_id = uuid.uuid4().hex
        metrics.REJECTED.labels(flow.level, flow.schema, reason).inc()
        log.info(
            "%s %s 429 %s level=%s requestId=%s",
            scope.get("method", "WEBSOCKET"),
            scope.get("path"),
            why,
            flow.level,
            request_id,
        )
        error = too_many_requests(why, self.retry_after.dropped(flow.level))
        if spread and self.limits.refusal_spread > 0:
            await asyncio.sleep(random.uniform(0, self.limits.refusal_spread))  # holds no seat
        await answer_status(scope, receive, send, error, request_id, _flow_headers(flow))


def _flow_headers(flow: Flow) -> list[tuple[bytes, bytes]]:
    """The flow schema's and priority level's UIDs, as kube-apiserver sends them."""
    return [
        (b"x-kubernetes-pf-flowschema-uid", uid("flowschema", flow.schema).encode()),
        (b"x-kubernetes-pf-prioritylevel-uid", uid("prioritylevel", flow.level).encode()),
    ]


async def answer_status(
    scope: Scope,
    receive: Receive,
    send: Send,
    error: ApiError,
    request_id: str,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answers a request the application never saw with `error` as a Status (HTTP), or, on a
    websocket, as watch_ws answers a watch it cannot serve: accept, one ERROR event carrying
    the Status, close with 4000 + the HTTP code."""
    body = status_bytes(scope, error, request_id)
    if scope["type"] == "websocket":
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        event = b'{"type":"ERROR","object":' + body + b"}"
        await send({"type": "websocket.send", "text": event.decode()})
        await send({"type": "websocket.close", "code": 4000 + error.code})
        return
    headers = [
        (b"content-type", b"application/json"),
        (b"x-request-id", request_id.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if error.retry_after is not None:
        headers.append((b"retry-after", str(error.retry_after).encode()))
    headers.extend(extra_headers or [])
    await send({"type": "http.response.start", "status": error.code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
