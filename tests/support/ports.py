"""Free TCP ports for the servers the tests start.

The kernel may hand out the port it gave a moment ago once that socket is closed, so two calls
in a row can return the same number (a daphne asked to listen twice on one port exits). This
process remembers every port it handed out and never hands one out twice.
"""

from __future__ import annotations

import socket
import threading

_GIVEN: set[int] = set()
_LOCK = threading.Lock()


def free_port() -> int:
    """A port nobody listens on now, and that this process has not handed out before."""
    with _LOCK:
        while True:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = int(probe.getsockname()[1])
            if port not in _GIVEN:
                _GIVEN.add(port)
                return port
