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
# The committed event-log row itself (revision, resource, namespace, name, type, body,
# prev_body), offered before `published` to whoever can use it at once (the hub's cache).
Row = tuple[int, str, str, str, str, str, str]
_commit_listeners: list[Callable[[Row], None]] = []


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


def subscribe_commits(listener: Callable[[Row], None]) -> None:
    if listener not in _commit_listeners:
        _commit_listeners.append(listener)


def unsubscribe_commits(listener: Callable[[Row], None]) -> None:
    if listener in _commit_listeners:
        _commit_listeners.remove(listener)


def committed(row: Row) -> None:
    """A write's event-log row, once its transaction has committed; then `published`."""
    for listener in list(_commit_listeners):
        try:
            listener(row)
        except Exception:  # the write already committed; the pull will bring it instead
            log.exception("commit listener failed for revision %s", row[0])
    published(row[0])
