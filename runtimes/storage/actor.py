"""Who is writing: the caller's username, recorded with each event of the log (the console's
History tab shows it), and, for writers that no request audits (the controller), a callback
told of each committed write.

The caller is a context variable, set around each API request and console view and for the
controller's threads; a write with none set records "" (a management command, the seed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

# (event type ADDED/MODIFIED/DELETED, resource plural, group, api version, namespace, name)
WriteListener = Callable[[str, str, str, str, str, str], None]


@dataclass(frozen=True)
class Actor:
    username: str
    on_write: WriteListener | None = None


NOBODY = Actor("")
_current: ContextVar[Actor] = ContextVar("nodus_actor", default=NOBODY)


def current() -> Actor:
    return _current.get()


@contextmanager
def acting(actor: Actor) -> Iterator[None]:
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)


def set_for_thread(actor: Actor) -> None:
    """For a thread that runs as one actor all its life (the controller's workers)."""
    _current.set(actor)
