"""Same-origin checks for session-authenticated websockets.

A browser sends the session cookie on a websocket opened by any site. Channels'
`AllowedHostsOriginValidator` admits every allowed host (all of them with ALLOWED_HOSTS=*), so
consumers that trust the session also require the Origin to be this very host.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def same_origin(scope: dict[str, Any]) -> bool:
    headers = {
        k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
    }
    origin, host = headers.get("origin"), headers.get("host")
    if not origin or not host:
        return False
    return urlsplit(origin).netloc == host
