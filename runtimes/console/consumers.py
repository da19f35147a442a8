"""The console's websocket: live rows and runtime headers, pushed as htmx out-of-band swaps.

One socket per browser tab (it lives in base.html outside the swapped area, so it survives
boosted navigation). The page sends ``{"type": "watch", "view", "query", "revision", "ids"}``
whenever what it shows changes; the consumer then follows the hub from that revision with the
user's permissions and the page's filters. On a reconnect the page sends the last revision it
was delivered, so nothing is missed or repeated.

Security: the session authenticates (`AuthMiddlewareStack`); the origin must be this site's
own (same host), on top of `AllowedHostsOriginValidator`, which lets any origin through when
ALLOWED_HOSTS is ``*``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.urls import path

from runtimes.accounts.origin import same_origin
from runtimes.apimachinery import errors
from runtimes.console.live import Watch, fragments, missed_notice
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.watch.hub import TooOld, TooSlow, run_db, subscribe

log = logging.getLogger("nodus.console")
FORBIDDEN_ORIGIN = 4403
VIEWS = ("catalog", "runtime")


class ConsoleConsumer(AsyncWebsocketConsumer):
    # A watch across projects, as the catalog's list: each change is shown only to those who
    # may read its project (live.Watch).
    access = authorization.role({authorization.WATCH: "watch"}, TRAINING_RUNTIMES)
    task: asyncio.Task[None] | None = None

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
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self._stop()

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
            async with subscribe(revision, TRAINING_RUNTIMES.key) as events:
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
