"""The console's websocket: the catalog's and the Jobs pages' results and runtime headers, pushed
as htmx out-of-band swaps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.urls import path

from runtimes.accounts import access, audit
from runtimes.accounts.origin import same_origin
from runtimes.apimachinery import errors
from runtimes.console.live import Watch, fragments, kind_of, missed_notice, namespace_of
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.watch.guard import Credential, StreamGuard
from runtimes.watch.hub import HubEvent, TooOld, TooSlow, run_db, subscribe

# One socket per browser tab (it lives in base.html outside the swapped area, so it survives
# boosted navigation). The page sends ``{"type": "watch", "view", "query", "revision", "ids"}``
# whenever what it shows changes; the consumer then follows the hub from that revision with the
# user's permissions and the page's filters (changes in a project the user may not read never
# make a push, and a watch of such a project is ignored, as one of a missing project), pushing at
# most one message per page every `PUSH_INTERVAL` (a burst of writes becomes one redraw). On a
# reconnect the page sends the last revision it was delivered, so nothing is missed or repeated;
# when that revision has been compacted away (410 Expired) or the page fell behind, the page is
# redrawn from the store and told so. Each push names the watch (`key`) it answers, so a page
# drops one meant for what it showed before.
#
# Security: the session authenticates (`AuthMiddlewareStack`); the origin must be this site's
# own (same host), on top of `AllowedHostsOriginValidator`, which lets any origin through when
# ALLOWED_HOSTS is ``*``. While the socket is open a `StreamGuard` (`runtimes.watch.guard`) keeps
# checking the session: signing out, a changed password or a deactivated account closes it with
# 4401, losing a project it could read (or write) with 4403; `static/console/live.js` tells the
# user what happened.

log = logging.getLogger("nodus.console")
FORBIDDEN_ORIGIN = 4403
VIEWS = ("catalog", "runtime", "jobs")
PUSH_INTERVAL = 0.25  # seconds: at most one push per page in this long
IDLE_SECONDS = 25.0


def projects_of(user: Any) -> tuple[frozenset[str] | None, frozenset[str]]:
    """What the console shows `user`: the projects they read (None: all) and write."""
    readable = access.readable_projects(user)
    return (
        None if readable is None else frozenset(readable),
        frozenset(access.writable_projects(user)),
    )


def still_allowed(
    consumer_access: authorization.Access, was: tuple[frozenset[str] | None, frozenset[str]]
) -> Any:
    """The recheck of an open console socket: signed in as before, and no project lost."""

    was_read, was_written = was

    def recheck(user: Any) -> None:
        authorization.check(user, consumer_access, authorization.WATCH)
        readable, writable = projects_of(user)
        lost_read = readable is not None and (was_read is None or not was_read <= readable)
        if lost_read or not was_written <= writable:
            raise errors.ApiError("Forbidden", "your access to a project was withdrawn")

    return recheck


def open_guard(user: Any, session: Any, consumer_access: authorization.Access) -> StreamGuard:
    """The guard of a console socket, made with what the user may see now (sync)."""
    recheck = still_allowed(consumer_access, projects_of(user))
    return StreamGuard(Credential.session(user, session), recheck)


class ConsoleConsumer(AsyncWebsocketConsumer):
    # A watch across projects, as the catalog's list: each change is shown only to those who
    # may read its project (live.Watch).
    access = authorization.role({authorization.WATCH: "watch"}, TRAINING_RUNTIMES)
    task: asyncio.Task[None] | None = None
    guarding: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        user = self.scope.get("user") or AnonymousUser()
        if not same_origin(self.scope):
            audit.record_websocket(self.scope, user, 403, "connect")
            await self.close(code=FORBIDDEN_ORIGIN)
            return
        try:
            await run_db(authorization.check, user, self.access, authorization.WATCH)
        except errors.ApiError as error:
            audit.record_websocket(self.scope, user, error.code, "connect")
            await self.close(code=4000 + error.code)  # 4401 Unauthorized
            return
        guard = await run_db(open_guard, user, self.scope.get("session"), self.access)
        await self.accept()
        self.guarding = asyncio.create_task(self._guard(guard))

    async def _guard(self, guard: StreamGuard) -> None:
        """Closes the socket (4401, 4403) once its session or its projects are taken away."""
        while True:
            await asyncio.sleep(guard.poll)
            error = await guard.verdict()
            if error is not None:
                log.info("console socket of %s closed: %s", self.scope.get("user"), error.message)
                await self._stop()
                await self.close(code=4000 + error.code)
                return

    async def disconnect(self, code: int) -> None:
        await self._stop()
        guarding, self.guarding = self.guarding, None
        if guarding is not None and guarding is not asyncio.current_task():
            guarding.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await guarding

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "{}")
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        await self._stop()
        if message.get("type") != "watch" or message.get("view") not in VIEWS:
            return
        try:
            revision = max(0, int(message.get("revision") or 0))
            key = max(0, min(int(message.get("key") or 0), 2**31))
        except (TypeError, ValueError):
            return
        ids = [str(i) for i in message.get("ids") or [] if isinstance(i, str)][:5000]
        query = str(message.get("query") or "")[:4096]
        watch = await run_db(
            Watch.open, self.scope["user"], message["view"], query, ids, key, revision
        )
        if not watch.follows_readable():
            return  # as for a project that does not exist: silence, whatever happens there
        self.task = asyncio.create_task(self._follow(watch, revision))

    async def _stop(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _follow(self, watch: Watch, revision: int) -> None:
        try:
            while True:
                try:
                    await self._tail(watch, revision)
                except (TooOld, TooSlow):
                    # The page's resume point is gone (410) or it fell behind: redraw what it
                    # shows from the store, say so, and follow on from there.
                    await asyncio.sleep(PUSH_INTERVAL)  # at most one redraw per interval
                    await self.send(text_data=await run_db(fragments, watch, [], True))
                    revision = watch.rendered
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("console live updates failed")
            await self.send(text_data=missed_notice())

    async def _tail(self, watch: Watch, revision: int) -> None:
        """Follows the hub from `revision`, one push per batch of changes, and at most one per
        `PUSH_INTERVAL`: a burst of writes is coalesced into one redraw, so a page's work is
        bounded by time, not by how many objects changed."""
        loop = asyncio.get_running_loop()
        kind, namespace = kind_of(watch.view), namespace_of(watch)
        pending: list[HubEvent] = []
        sent_at = -PUSH_INTERVAL
        async with subscribe(revision, kind.key, namespace) as events:
            while True:
                wait = sent_at + PUSH_INTERVAL - loop.time() if pending else IDLE_SECONDS
                if wait > 0:
                    batch = await events.next_batch(timeout=wait)
                    # Not even a revision marker for a project the user may not read.
                    pending += [event for event in batch if watch.sees(event.namespace)]
                if not pending or loop.time() < sent_at + PUSH_INTERVAL:
                    continue
                batch, pending = pending, []
                sent_at = loop.time()
                await self.send(text_data=await run_db(fragments, watch, batch))


websocket_urlpatterns = [path("ws/console", ConsoleConsumer.as_asgi())]
