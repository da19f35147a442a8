"""GET and list served on the event loop, from the watch cache, when memory can answer.

An API read normally runs its DRF view on a pool thread (`viewpool`). The reads informers and
kubectl make most (a GET, a list with `resourceVersion` "" or "0", any selectors and `limit`,
as JSON, by a bearer token seen in the last seconds) need no database at all once the store's
current revision is known, and that is read once for all the reads waiting together
(`readstate.probe`). Those are answered here, on the loop, with no thread hop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import SynchronousOnlyOperation
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse

from runtimes.accounts.throttling import remembered_bearer_user
from runtimes.api import listing, media, metrics, readstate, viewpool
from runtimes.api.authentication import client_address
from runtimes.api.base import KubeView
from runtimes.api.listoptions import ListOptions, parse_list_options
from runtimes.api.requestinfo import kind_for
from runtimes.apimachinery import errors
from runtimes.registry.authorization import check
from runtimes.registry.resources import ResourceType
from runtimes.watch import hub

# Nothing is decided differently: the caller is the token's user as `bearer_user` found it a
# moment ago (`throttling.remembered_bearer_user`, the same limiter first), authorized by the same
# `authorization.check`, whose role lookups here answer only from memory (`accounts.memo`); the
# list is the same `listing.list_page`. Whatever would need the database (a token or role not
# looked up recently, a continue token, an older resourceVersion) or would not be a 200 (a
# refusal, a missing object, another media type, `pretty`) falls through to the pooled view,
# which answers it exactly as before. Django itself refuses ORM calls on the loop
# (`SynchronousOnlyOperation`), so a lookup that was not remembered cannot block it.

# The pooled views' DRF renderer, used here from the async view.
_RENDERER = media.KubeJSONRenderer()
# Lists larger than this stream item by item; a chunk is this many items.
STREAM_OVER_BYTES = 256 * 1024
CHUNK_ITEMS = 64


def enabled() -> bool:
    return bool(
        settings.NODUS_LOOP_READS and settings.NODUS_WATCH_CACHE and settings.NODUS_VIEW_POOL
    )


def remembered_caller(request: HttpRequest) -> tuple[Any, str] | None:
    """The bearer token's user, and the token, when it was looked up a moment ago."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    user = remembered_bearer_user(token, client_address(request.META))
    return None if user is None else (user, token)


def _servable_query(request: HttpRequest, view: type[KubeView]) -> bool:
    query = request.GET
    resource_version = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch")
    return (
        resource_version in ("", "0")
        and not query.get("continue")
        and (match is None or (match == "NotOlderThan" and resource_version == "0"))
        # Plain JSON is what the view would answer (not a Table kubectl asks for first).
        and media.accepted_as(request, view.renderings) == ("", "")
        and not media.wants_pretty(request)
        and not media.wants_yaml(request)
    )


async def state_for(resource_version: str) -> readstate.StoreState | None:
    """The store state a read at `resource_version` is served at ("0": the cache's; else
    read now), once the cache has caught up with it; None when it can't catch up in time
    (the pool answers)."""
    running = hub.running() or await viewpool.run(hub.get_hub)  # the first read starts it
    if resource_version == "0":  # at once, or not here: a cache still warming goes to the pool
        return readstate.StoreState(running.last) if await running.caught_up(0, 0) else None
    state = await readstate.probe()
    if not await running.caught_up(state.current, listing.WAIT_FOR_REVISION_SECONDS):
        return None
    return state


async def serve(
    request: HttpRequest,
    view: type[KubeView],
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
) -> HttpResponseBase | None:
    """The 200 answer to a GET served from memory, or None: the pooled view answers."""
    if not enabled() or request.method != "GET" or not _servable_query(request, view):
        return None
    rt = kind_for(request.path, plural)
    if rt is None or (namespace is not None and not rt.namespaced):
        return None
    caller = remembered_caller(request)
    if caller is None:
        return None
    user = caller[0]
    try:
        check(user, view.access, "GET", namespace or "", name or "", rt)
        opts = None
        if name is None:
            namespaces = listing.readable_namespaces(rt, user, namespace)
            opts = parse_list_options(rt, request.GET, namespaces)
    except (errors.ApiError, SynchronousOnlyOperation):
        return None
    state = await state_for(request.GET.get("resourceVersion", ""))
    if state is None:
        return None
    try:
        with readstate.known(state):
            if opts is None:
                body = _item(rt.key, namespace, name, state)
                answer: HttpResponseBase | None = None if body is None else HttpResponse(body)
            else:
                answer = _list(rt, namespace, opts)
    except (errors.ApiError, readstate.WouldBlock, SynchronousOnlyOperation):
        return None
    if answer is None:
        return None
    request.user = user  # for the access log, as DRF sets it
    metrics.loop_read("get" if opts is None else "list", rt.plural)
    answer["Content-Type"] = media.JSON
    answer["Allow"] = allow(view)  # as DRF's APIView answers
    return answer


def allow(view: type[KubeView]) -> str:
    """The methods the view serves (HEAD with GET, as Django's View.setup adds it)."""
    return ", ".join(
        m.upper()
        for m in view.http_method_names
        if hasattr(view, m) or (m == "head" and hasattr(view, "get"))
    )


def _item(resource: str, namespace: str | None, name: str | None, state: Any) -> bytes | None:
    found = hub.get_hub().latest_entry(resource, (namespace or "", name or ""))
    if found is None or found[0] is None or found[1] < state.current:
        return None  # not warm, not held (the pooled view says why), or behind
    return bytes(_RENDERER.render(orjson.Fragment(found[0].raw)))


def _list(rt: ResourceType, namespace: str | None, opts: ListOptions) -> HttpResponseBase:
    """The list as `listing.list_body` writes it; past `NODUS_LIST_STREAM_BYTES`, streamed
    item by item (KEP-5116) with its length said up front, so no body is ever built whole and
    the loop serves others between chunks."""
    page = listing.list_page(rt, namespace, opts, stored=True)
    texts: list[str] = page.items  # from the cache: always the stored JSON text
    size = sum(len(t) if t.isascii() else len(t.encode()) for t in texts)  # isascii is O(1)
    meta = page.list_meta()
    if size < int(settings.NODUS_LIST_STREAM_BYTES):
        # DRF's renderer, as the pooled view writes it: stored text embedded as it is.
        items = [orjson.Fragment(t) for t in texts]
        return HttpResponse(_RENDERER.render(listing.render_list(rt, None, items, meta, "")))
    empty = _RENDERER.render(listing.render_list(rt, None, [], meta, ""))
    head, tail = empty[:-2], b"]}"  # `..."items":[` and `]}`
    streamed = StreamingHttpResponse(_chunks(head, texts, tail))
    streamed["Content-Length"] = str(len(head) + size + max(len(texts) - 1, 0) + len(tail))
    return streamed


async def _chunks(head: bytes, texts: list[str], tail: bytes) -> AsyncIterator[bytes]:
    yield head
    for start in range(0, len(texts), CHUNK_ITEMS):
        part = ",".join(texts[start : start + CHUNK_ITEMS]).encode()
        yield b"," + part if start else part
        await asyncio.sleep(0)  # let the loop serve others between chunks
    yield tail
