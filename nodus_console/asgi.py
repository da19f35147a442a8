"""ASGI entry point: HTTP (Django) and websockets (Channels), one process, one event loop."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodus_console.settings")
django_asgi = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from nodus_console.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi, "websocket": websocket_application()})
