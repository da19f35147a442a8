"""ASGI entry point: HTTP (Django) and websockets (Channels), one process, one event loop.

Every request passes three middlewares first: `HeadWithoutBody` (a HEAD answer never carries
body bytes), `Draining` (clean shutdown: it knows what is in flight) and `FlowControl`
(per-client seat pools: overload answers 429 at once), before any work is queued for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import django
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpResponse, HttpResponseBase

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
    """Django's ASGI handler, without a thread made for each API request.

    Django runs every request inside asgiref's `ThreadSensitiveContext`: the request's sync
    work (here only the request_started and request_finished signals' receivers, and closing
    the response) runs on a thread started for that request, and a second thread is started
    to join it at the end. API views run on the view pool and their middleware hooks on the
    loop (`runtimes.api.viewpool`, `nodus_console.middleware`), so for an API request those
    two threads did nothing but run the signals, and starting them cost more than the GET's
    view (an API GET's p50 went from 3.3 to 2.8 ms, `benchmarks/run.py http`). An API
    request's signals now run on asgiref's one long-lived thread; console pages keep Django's
    context, as their sync views need it.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_api_path(str(scope.get("path") or "")):
            await self.handle(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

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
