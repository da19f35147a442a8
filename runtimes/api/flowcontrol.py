"""Overload answers 429 at once, never a timeout: per-client seat pools, as API Priority and
Fairness.

An ASGI middleware in front of everything (HTTP and websockets, API and console) counts the
requests in flight before any work is queued for them: before Django reads a body, before a
request thread is started or a database call is put on the executor. Each request takes a seat
in one of three pools, for its client and for the whole process; when either is full it is
answered at once with 429 ``TooManyRequests`` and ``Retry-After: 1``, the Status
kube-apiserver's API Priority and Fairness sends when it rejects.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson
from django.conf import settings

from runtimes.api import metrics
from runtimes.apimachinery.errors import ApiError

# | pool | what | per client | process |
# |---|---|---|---|
# | ``list`` | GET of a collection; a watch's initial list, until its response starts | 2 | 8 |
# | ``watch`` | an HTTP watch, any websocket (API watch, console), while open | 100 | 1,000 |
# | ``other`` | everything else: gets, writes, discovery, console pages | 8 | 16 |
#
# A watch lists first when it has no resourceVersion (or "0") or asks sendInitialEvents=true.
# A seat is held until the response's last byte is sent (a watch's list seat until its response
# starts), not through Django's closing of the request after it: a client sending one request
# at a time never finds its own seats taken.
#
# Why these values:
#
# - Every list and "other" request runs its Python on a thread of its own (Django's sync views),
#   and threads of one process take turns on one interpreter lock. On the 2 cores this is sized
#   for, 8 lists of 10,000 objects already keep both cores busy; more would only make each
#   slower while /livez and writes wait for the lock behind them. So lists have a small pool of
#   their own (8, the executor's 12 threads less a reserve of 4, see below), and gets and writes
#   another (16), so a herd of lists can't take the seats writes need.
# - A watch set-up that lists first runs on the event loop's default executor, which
#   ``manage.py serve`` sizes to the list seats plus 4 (``NODUS_ASGI_THREADS``, 12): the
#   watches' catch-up reads of the event log and the hub always find a free thread.
# - Per client 2 lists (kubectl and client-go informers list one at a time), 8 others (a
#   browser opens at most 6 connections to a host), 100 watches (an informer per kind and
#   namespace, a console tab each). A client is its bearer token (hashed), else its session
#   cookie, else its address; what one client can hold is a fraction of the whole, so one client
#   cannot fill a pool alone.
# - An open watch costs memory and a coroutine, not a thread: 1,000 in a process.
#
# When only the process's seats of a pool are taken (not the client's own), a request waits in
# that pool's queue, first come first served, for up to ``NODUS_FLOW_QUEUE_SECONDS`` (10 s) and
# while fewer than ``NODUS_FLOW_QUEUE_LENGTH`` (1,000) wait, as APF queues before it rejects: a
# herd of informers starting at once is served in turn rather than sent away to come back all
# together a second later. Past either bound: 429.
#
# Health endpoints (/healthz, /livez, /readyz and their checks) are exempt, as kube's ``exempt``
# priority level: a load balancer must see a busy server as alive. Static files too (served from
# memory).
#
# Settings (env): ``NODUS_MAX_{LISTS,WATCHES,OTHERS}_PER_CLIENT`` and
# ``NODUS_MAX_{LISTS,WATCHES,OTHERS}_INFLIGHT``; 0 means no limit.

log = logging.getLogger("nodus.flowcontrol")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LIST, WATCH, OTHER = "list", "watch", "other"
POOLS = (LIST, WATCH, OTHER)
RETRY_AFTER_SECONDS = 1  # kube-apiserver's answer to a rejected request
EXEMPT_PATHS = ("/healthz", "/livez", "/readyz")
EXEMPT_PREFIXES = ("/static/",)
TOKEN_PROTOCOL = "base64url.bearer.authorization.k8s.io."
TRUE = {"1", "true"}
EXECUTOR_RESERVE = 4


@dataclass(frozen=True)
class Limits:
    """Seats per pool, per client and for the process (0: unlimited)."""

    per_client: dict[str, int]
    inflight: dict[str, int]
    queue_seconds: float = 10.0
    queue_length: int = 1000

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            per_client={
                LIST: int(getattr(settings, "NODUS_MAX_LISTS_PER_CLIENT", 2)),
                WATCH: int(getattr(settings, "NODUS_MAX_WATCHES_PER_CLIENT", 100)),
                OTHER: int(getattr(settings, "NODUS_MAX_OTHERS_PER_CLIENT", 8)),
            },
            inflight={
                LIST: int(getattr(settings, "NODUS_MAX_LISTS_INFLIGHT", 8)),
                WATCH: int(getattr(settings, "NODUS_MAX_WATCHES_INFLIGHT", 1000)),
                OTHER: int(getattr(settings, "NODUS_MAX_OTHERS_INFLIGHT", 16)),
            },
            queue_seconds=float(getattr(settings, "NODUS_FLOW_QUEUE_SECONDS", 10.0)),
            queue_length=int(getattr(settings, "NODUS_FLOW_QUEUE_LENGTH", 1000)),
        )


@dataclass(frozen=True)
class Demand:
    """The seats a request needs: its pool for its whole life, and a list seat while a watch
    lists first (given back when its response starts)."""

    pool: str
    lists_first: bool = False


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
    """The size of the event loop's default executor (watch set-up, event-log reads): the list
    seats plus a reserve of 4, so the hub's reads always find a thread."""
    configured = int(getattr(settings, "NODUS_ASGI_THREADS", 0))
    return configured or Limits.from_settings().inflight[LIST] + EXECUTOR_RESERVE


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


class SeatPools:
    """The counts of seats taken, per pool, for each client and in all. Thread-safe, though
    ASGI calls it from the event loop only."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._taken: dict[str, int] = dict.fromkeys(POOLS, 0)
        self._by_client: dict[tuple[str, str], int] = {}
        self._queues: dict[str, collections.deque[asyncio.Future[None]]] = {}

    def taken(self, pool: str, client: str | None = None) -> int:
        with self._lock:
            if client is None:
                return self._taken[pool]
            return self._by_client.get((pool, client), 0)

    def acquire(self, pools: list[str], client: str) -> str | None:
        """Takes one seat in each pool, all or none; returns the first full pool's
        description (None when every seat was taken)."""
        return self._try(pools, client)[0]

    def _try(self, pools: list[str], client: str) -> tuple[str | None, str | None]:
        """(why refused or None, the pool whose process-wide seats were full or None)."""
        with self._lock:
            for pool in pools:
                mine = self._by_client.get((pool, client), 0)
                per_client = self.limits.per_client[pool]
                if per_client and mine >= per_client:
                    return f"this client already has {mine} {pool} requests in flight", None
                inflight = self.limits.inflight[pool]
                if inflight and self._taken[pool] >= inflight:
                    return f"the server has {self._taken[pool]} {pool} requests in flight", pool
            for pool in pools:
                self._taken[pool] += 1
                self._by_client[(pool, client)] = self._by_client.get((pool, client), 0) + 1
                metrics.SEATS_IN_USE.labels(pool).inc()
            return None, None

    async def acquire_queued(self, pools: list[str], client: str) -> str | None:
        """`acquire`, but when only the process's seats are full, waits in that pool's queue
        (first come, first served) for up to the limits' `queue_seconds`, as API Priority and
        Fairness queues; a full queue or the wait running out is the refusal."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.queue_seconds
        woken: str | None = None  # the pool whose freed seat this request was woken for
        while True:
            refused, full = self._try(pools, client)
            if refused is None:
                return None
            if woken is not None:
                self._next_in_queue(woken)  # the seat it was woken for is still free: pass it on
                woken = None
            if full is None:
                return refused
            queue = self._queues.setdefault(full, collections.deque())
            remaining = deadline - loop.time()
            if remaining <= 0 or len(queue) >= self.limits.queue_length:
                return f"{refused}, and {len(queue)} more wait for a seat"
            turn: asyncio.Future[None] = loop.create_future()
            queue.append(turn)
            metrics.QUEUED.labels(full).inc()
            try:
                await asyncio.wait_for(turn, remaining)
                woken = full
            except TimeoutError:
                if turn.done() and not turn.cancelled():
                    self._next_in_queue(full)  # woken just as it gave up
                return f"{refused}, and it waited {self.limits.queue_seconds:g} s for a seat"
            finally:
                metrics.QUEUED.labels(full).dec()
                if turn in queue:
                    queue.remove(turn)

    def _next_in_queue(self, pool: str) -> None:
        queue = self._queues.get(pool)
        while queue:
            turn = queue.popleft()
            if not turn.done():
                turn.set_result(None)
                return

    def release(self, pool: str, client: str) -> None:
        with self._lock:
            self._taken[pool] -= 1
            left = self._by_client[(pool, client)] - 1
            if left:
                self._by_client[(pool, client)] = left
            else:
                del self._by_client[(pool, client)]
            metrics.SEATS_IN_USE.labels(pool).dec()
        self._next_in_queue(pool)


def too_many_requests(why: str) -> ApiError:
    return ApiError(
        "TooManyRequests",
        "Too many requests, please try again later.",
        retry_after=RETRY_AFTER_SECONDS,
        fix=f"The server is at its limit ({why}). Retry after {RETRY_AFTER_SECONDS} s (kubectl "
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
    """The ASGI middleware: ``FlowControl(app)``; limits from settings unless given."""

    def __init__(self, app: ASGIApp, limits: Limits | None = None) -> None:
        self.app = app
        self.pools = SeatPools(limits or Limits.from_settings())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        demand = classify(scope) if scope["type"] in {"http", "websocket"} else None
        if demand is None:
            await self.app(scope, receive, send)
            return
        client = client_of(scope)
        wanted = [demand.pool, LIST] if demand.lists_first else [demand.pool]
        refused = await self.pools.acquire_queued(wanted, client)
        if refused is not None:
            await self._refuse(scope, receive, send, demand.pool, client, refused)
            return
        held = set(wanted)

        def free(pool: str) -> None:
            if pool in held:
                held.discard(pool)
                self.pools.release(pool, client)

        async def tracked(message: Message) -> None:
            kind = message["type"]
            if demand.lists_first and kind in {
                "http.response.start",
                "websocket.accept",
                "websocket.close",
            }:
                free(LIST)  # a watch's initial list is written: its list seat is free
            await send(message)
            if kind == "http.response.body" and not message.get("more_body", False):
                # The response is complete: its client may send the next request at once, while
                # Django still closes the request (signals, database connections). Counting
                # that tail would refuse a client that sends one request at a time.
                for pool in list(held):
                    free(pool)

        try:
            await self.app(scope, receive, tracked)
        finally:
            for pool in list(held):
                free(pool)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, pool: str, client: str, why: str
    ) -> None:
        request_id = uuid.uuid4().hex
        metrics.REJECTED.labels(pool, "concurrency-limit").inc()
        log.info(
            "%s %s 429 %s client=%s requestId=%s",
            scope.get("method", "WEBSOCKET"),
            scope.get("path"),
            why,
            client.split(":", 1)[0],
            request_id,
        )
        await answer_status(scope, receive, send, too_many_requests(why), request_id)


async def answer_status(
    scope: Scope, receive: Receive, send: Send, error: ApiError, request_id: str
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
    await send({"type": "http.response.start", "status": error.code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
