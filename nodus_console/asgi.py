"""ASGI entry point: HTTP (Django) and websockets (Channels), one process, one event loop.

Every request passes three middlewares first: `HeadWithoutBody` (a HEAD answer never carries
body bytes), `Draining` (clean shutdown: it knows what is in flight) and `FlowControl`
(per-client seat pools: overload answers 429 at once), before any work is queued for it.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodus_console.settings")
django_asgi = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from nodus_console.routing import websocket_application  # noqa: E402
from runtimes.api.draining import Draining  # noqa: E402
from runtimes.api.flowcontrol import FlowControl, is_exempt, is_long_running  # noqa: E402
from runtimes.api.head import HeadWithoutBody  # noqa: E402

application = HeadWithoutBody(
    Draining(
        FlowControl(
            ProtocolTypeRouter({"http": django_asgi, "websocket": websocket_application()})
        ),
        is_long_running,
        is_exempt,
    )
)
