"""ASGI entry point: HTTP (Django) and websockets (Channels), one process, one event loop.

Every request passes three middlewares first: `HeadWithoutBody` (a HEAD answer never carries
body bytes), `Draining` (clean shutdown: it knows what is in flight) and `FlowControl`
(per-client seat pools: overload answers 429 at once), before any work is queued for it.
"""

from __future__ import annotations

import os
from typing import Any

import django
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodus_console.settings")
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter  # noqa: E402

from nodus_console.routing import websocket_application  # noqa: E402
from runtimes.api.draining import Draining  # noqa: E402
from runtimes.api.flowcontrol import FlowControl, is_exempt, is_long_running  # noqa: E402
from runtimes.api.head import HeadWithoutBody  # noqa: E402
from runtimes.api.status import is_api_path  # noqa: E402


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
