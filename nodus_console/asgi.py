"""ASGI entry point: HTTP (Django) and websockets (Channels), one process, one event loop.

Every request passes three middlewares first: `HeadWithoutBody` (a HEAD answer never carries
body bytes), `Draining` (clean shutdown: it knows what is in flight) and `FlowControl`
(per-client seat pools: overload answers 429 at once), before any work is queued for it.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterator, Sequence
from contextlib import closing, suppress
from typing import Any, TypeVar

import django
from asgiref.sync import iscoroutinefunction
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.urls import set_script_prefix

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodus_console.settings")
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter  # noqa: E402

from nodus_console.routing import websocket_application  # noqa: E402
from runtimes.api.draining import Draining  # noqa: E402
from runtimes.api.flowcontrol import FlowControl, is_exempt, is_long_running  # noqa: E402
from runtimes.api.head import HeadWithoutBody  # noqa: E402
from runtimes.api.status import is_api_path  # noqa: E402

T = TypeVar("T")


class Handler(ASGIHandler):
    """Django's ASGI handler, with nothing of an API request run on a thread but its view.

    Django runs every request inside asgiref's `ThreadSensitiveContext`: the request's sync
    work (the request_started and request_finished signals' receivers, and closing the
    response) runs on a thread started for that request, and a second thread is started to
    join it at the end. Console pages keep that: their sync views need it.

    An API request's view runs on the view pool and its middleware hooks on the loop
    (`runtimes.api.viewpool`, `nodus_console.middleware`), so those threads only ran the
    request signals. The receivers (Django's: `close_old_connections`, `reset_queries`,
    `close_caches`, `reset_urlconf`) look after the thread they run on, which for an API
    request does no database work: its view's thread does, and the pool checks that
    thread's connection before and after each view as these receivers would. The API work
    that uses a database connection on asgiref's thread (the few sync views not on the pool,
    health checks, a session's save) checks it around the call (`make_view_atomic`,
    `channels.db.database_sync_to_async`). So an API request sends neither signal, and no
    part of it waits for a thread but its view. The server's CPU per request (from /proc, one
    client, runs of 2,000 GETs of an empty list and 500 creates, before and after in turn,
    four runs each way): GET 3.2-3.7 to 2.5-2.7 ms, create 4.4-5.1 to 3.8-4.2 ms.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_api_path(str(scope.get("path") or "")):
            await self.handle_api(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def handle_api(self, scope: Any, receive: Any, send: Any) -> None:
        """An API request: read, answered and sent, or dropped when its client goes away
        first (a watch streams until then)."""
        try:
            body = await self.read_body(receive)
        except RequestAborted:
            return
        with closing(body):
            set_script_prefix(get_script_prefix(scope))
            request, refusal = self.create_request(scope, body)
            if request is None:
                assert refusal is not None  # Django answers what it could not make a request of
                await self.send_response(refusal, send)
                _close(refusal)
                return
            answering = asyncio.ensure_future(self._answer(request, send))
            leaving = asyncio.ensure_future(self.listen_for_disconnect(receive))
            try:
                await asyncio.wait((answering, leaving), return_when=asyncio.FIRST_COMPLETED)
            finally:
                answering.cancel()
                leaving.cancel()
                outcomes = await asyncio.gather(answering, leaving, return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, Exception) and not isinstance(outcome, RequestAborted):
                    raise outcome

    def make_view_atomic(self, view: Any) -> Any:
        """Django's, and a sync API view (discovery, namespaces, reviews: the few not on the view
        pool) has its thread's database connection checked before and after it, as the request
        signals checked it before (see `Handler`): a broken connection, or one past its age, is
        replaced rather than failing every later request on that thread."""
        view = super().make_view_atomic(view)
        if iscoroutinefunction(view):
            return view

        @functools.wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if not is_api_path(request.path):
                return view(request, *args, **kwargs)  # the request signals do it
            close_old_connections()
            try:
                return view(request, *args, **kwargs)
            finally:
                close_old_connections()

        return checked

    async def _answer(self, request: HttpRequest, send: Any) -> None:
        response = await self.run_get_response(request)
        try:
            await self.send_response(response, send)
        finally:
            _close(response)

    @classmethod
    def chunk_bytes(cls, data: Sequence[T]) -> Iterator[tuple[Sequence[T], bool]]:
        """A body goes out as one message, not in Django's 64 KiB slices: each slice was a copy,
        held in the transport's buffer beside the body itself until the client had read it all
        (a list of 10,000 objects is about 50 MB), and each was a turn of the event loop.
        Twisted's transport still writes it to the socket as fast as the client reads."""
        yield data, True

    async def send_response(self, response: HttpResponseBase, send: Any) -> None:
        await super().send_response(response, send)
        if isinstance(response, HttpResponse):
            # The transport holds what is still to be written. The response may sit in a
            # reference cycle until the collector's next full pass: its body need not.
            response.content = b""


def _close(response: HttpResponseBase) -> None:
    """Closes what `response` holds open, as `HttpResponseBase.close` does after it is sent,
    without the request_finished signal (see `Handler`): for an API answer that is the
    request's body (in memory, or a temporary file once large), closed in place."""
    closers = getattr(response, "_resource_closers", [])
    for closer in closers:
        with suppress(Exception):  # as Django: a closer's failure does not fail the answer
            closer()
    closers.clear()
    response.closed = True


django_asgi = Handler()

application = HeadWithoutBody(
    Draining(
        FlowControl(
            ProtocolTypeRouter({"http": django_asgi, "websocket": websocket_application()})
        ),
        is_long_running,
        is_exempt,
    )
)
