"""After-commit notification of new revisions, in this process.

The store calls `published(revision)` once a write's transaction has committed. The hub (watch
fan-out), the controller's work queue and the cross-process nudge subscribe here; none of them is
told about a revision that could still roll back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("nodus.events")

_listeners: list[Callable[[int], None]] = []


def subscribe(listener: Callable[[int], None]) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def unsubscribe(listener: Callable[[int], None]) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def published(revision: int) -> None:
    for listener in list(_listeners):
        try:
            listener(revision)
        except Exception:  # a broken listener must not fail the write that already committed
            log.exception("event listener failed for revision %s", revision)
