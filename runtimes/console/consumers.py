"""The console's websocket: live rows, runtime headers and job rows, pushed as htmx out-of-band
swaps.

One socket per browser tab (it lives in base.html outside the swapped area, so it survives
boosted navigation). The page sends ``{"type": "watch", "view", "query", "revision", "ids"}``
whenever what it shows changes; the consumer then follows the hub from that revision with the
user's permissions and the page's filters. On a reconnect the page sends the last revision it
was delivered, so nothing is missed or repeated.

Security: the session authenticates (`AuthMiddlewareStack`); the origin must be this site's
own (same host), on top of `AllowedHostsOriginValidator`, which lets any origin through when
ALLOWED_HOSTS is ``*``. While the socket is open a `StreamGuard` (`runtimes.watch.guard`) keeps
checking the session: signing out, a changed password or a deactivated account closes it with
4401, losing a project it could read (or write) with 4403; `static/console/live.js` tells the
user what happened.
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

from runtimes.accounts import access
from runtimes.accounts.origin import same_origin
from runtimes.apimachinery import errors
from runtimes.console.live import Watch, fragments, missed_notice
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_JOBS, TRAINING_RUNTIMES
from runtimes.watch.guard import Credential, StreamGuard
from runtimes.watch.hub import TooOld, TooSlow, run_db, subscribe

log = logging.getLogger("nodus.console")
FORBIDDEN_ORIGIN = 4403
VIEWS = ("catalog", "runtime", "jobs")


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
        if not same_origin(self.scope):
            await self.close(code=FORBIDDEN_ORIGIN)
            return
        user = self.scope.get("user") or AnonymousUser()
        try:
            await run_db(authorization.check, user, self.access, authorization.WATCH)
        except errors.ApiError as error:
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
        except (TypeError, ValueError):
            return
        ids = [str(i) for i in message.get("ids") or [] if isinstance(i, str)][:5000]
        watch = await run_db(
            Watch.open, self.scope["user"], message["view"], str(message.get("query") or ""), ids
        )
        self.task = asyncio.create_task(self._follow(watch, revision))

    async def _stop(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _follow(self, watch: Watch, revision: int) -> None:
        try:
            kind = TRAINING_JOBS if watch.view == "jobs" else TRAINING_RUNTIMES
            async with subscribe(revision, kind.key) as events:
                while True:
                    batch = await events.next_batch(timeout=25)
                    if not batch:
                        continue
                    message = await run_db(fragments, watch, batch)
                    await self.send(text_data=message)
        except (TooOld, TooSlow):
            await self.send(text_data=missed_notice())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("console live updates failed")
            await self.send(text_data=missed_notice())


websocket_urlpatterns = [path("ws/console", ConsoleConsumer.as_asgi())]
