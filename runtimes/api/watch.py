"""Watch over HTTP: newline-delimited JSON events streamed from an async generator.

The collection view hands `?watch=1` here. Authentication (bearer token or session),
authorization and every option are checked first, so a bad request is an ordinary Status
response; after that the answer is 200 and problems arrive as ERROR events, as from
kube-apiserver. Daphne sends the headers with the first chunk, so the stream opens with an
empty one: a client watching a quiet collection must not wait for the first event to learn
the watch was accepted. The watch remembers how its caller signed in, so a revoked token, a
removed role binding or a deactivated user ends it with an ERROR event (`watch.guard`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse

from runtimes.accounts.throttling import bearer_user
from runtimes.api import media, metrics, viewpool
from runtimes.api.authentication import client_address
from runtimes.api.requestinfo import kind_for
from runtimes.api.status import status_response
from runtimes.api.watchstream import WatchPlan, encoded, plan_watch, watch_chunks
from runtimes.apimachinery import errors
from runtimes.registry.authorization import WATCH, Access, check
from runtimes.watch.guard import Credential

log = logging.getLogger("nodus.watch")


def _not_found() -> errors.ApiError:
    return errors.path_not_found()


async def authenticate(request: HttpRequest) -> tuple[Any, Credential]:
    """The bearer token's user, else the session's, with how they signed in; a bad token is
    401 (429 after too many), as in DRF's views."""
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, token = header.partition(" ")
        token = token.strip()
        user = None
        if scheme.lower() == "bearer":
            user = await viewpool.run(bearer_user, token, client_address(request.META))
        if user is None:
            raise errors.ApiError("Unauthorized", "Unauthorized")
        return user, Credential.bearer(token)
    auser = getattr(request, "auser", None)
    user = await auser() if auser is not None else AnonymousUser()
    if not user.is_authenticated:
        raise errors.ApiError("Unauthorized", "Unauthorized")
    return user, Credential.session(user, getattr(request, "session", None))


async def prepare(
    request: HttpRequest, access: Access, plural: str, namespace: str | None
) -> WatchPlan:
    rt = kind_for(request.path, plural)
    if rt is None or (namespace is not None and not rt.namespaced):
        raise _not_found()
    if "watch" not in rt.verbs:
        raise errors.method_not_served()
    user, credential = await authenticate(request)
    rendering = media.accepted_as(request, RENDERINGS)
    refusal = None
    if rendering is None or media.wants_yaml(request):  # kube streams no YAML either
        refusal = media.not_acceptable()
    elif rendering[0] == media.PARTIAL_LIST:  # a watch event is one object
        refusal = media.wrong_partial(media.PARTIAL_LIST)
    if refusal is not None:
        # The role check comes first, as kube's filter does: 403 whatever the caller accepts.
        await viewpool.run(check, user, access, WATCH, namespace or "", "", rt)
        raise errors.ApiError("NotAcceptable", str(refusal.detail))
    assert rendering is not None  # refused above when there is none
    table_version = rendering[1] if rendering[0] == "Table" else None
    plan: WatchPlan = await viewpool.run(
        plan_watch, rt, user, access, namespace, request.GET, table_version, credential
    )
    return _with_metadata_rendering(plan, rendering)


# What a watch can stream besides plain objects: one-row Tables, or metadata only.
RENDERINGS = ("Table", *media.METADATA_RENDERINGS)


def _with_metadata_rendering(plan: WatchPlan, rendering: tuple[str, str]) -> WatchPlan:
    if rendering[0] == media.PARTIAL:
        plan.metadata_version = rendering[1]
    return plan


async def _lines(plan: WatchPlan) -> AsyncIterator[bytes]:
    yield b""  # flush the headers now
    # Counted once the client reads past the headers; a disconnect ends the generator (finally).
    metrics.watch_opened(plan.rt.plural)
    try:
        async for chunk in watch_chunks(plan):
            # One write for the events at hand: newline-delimited, as kube streams them. An
            # object's event is copied once, into this write, from the encoding its watchers share.
            yield b"".join([part for event in chunk for part in (encoded(event), b"\n")])
    except Exception:
        log.exception("watch stream failed")
        error = errors.internal_error("the watch failed")
        yield orjson.dumps({"type": "ERROR", "object": error.status()}) + b"\n"
    finally:
        metrics.watch_closed(plan.rt.plural)


async def watch(
    request: HttpRequest, access: Access, plural: str, namespace: str | None = None
) -> HttpResponseBase:
    """`access` is the collection's declaration, whose `WATCH` verb a watch needs."""
    try:
        plan = await prepare(request, access, plural, namespace)
    except errors.ApiError as error:
        response = status_response(request, error)
        if error.reason == "Unauthorized":
            response["WWW-Authenticate"] = 'Bearer realm="nodus"'
        return response
    stream = StreamingHttpResponse(_lines(plan), content_type="application/json")
    stream["Cache-Control"] = "no-cache, private"
    return stream
