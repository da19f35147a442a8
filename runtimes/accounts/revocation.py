"""The revocation epoch: a counter that moves whenever access may have been taken away.

Open streams (HTTP and WebSocket watches, the console's socket) checked their caller once, when
they opened. To notice a revoked token, a removed or lowered role binding, or a deactivated user,
each stream remembers the epoch it last checked at and checks its caller again once the epoch
has moved (`runtimes.watch.guard`). Reading the epoch costs nothing, so the checks that touch
the database happen only after such a change, never once per stream per second.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import close_old_connections, connections, transaction
from django.db.models import F
from django.db.models.signals import post_delete, post_save

from runtimes.storage.models import AccessEpoch, ApiToken, Membership

# `announce(reason)` says access may have been taken away. It moves the stored epoch (the
# `AccessEpoch` row) in the caller's transaction, and this process's epoch after the commit (a
# stream that checked before the commit would still see the old rows). The saves and deletes of
# `ApiToken`, `Membership` and the user model announce through signals (a user saved only to
# record a sign-in announces nothing), and so does signing out (Django sends `user_logged_out` just
# before it deletes the session; a stream that checks in between is caught by its backstop check);
# code that takes access away without those signals (a queryset `update`) calls `announce` itself.
#
# Other processes learn of it twice: at once through the channel layer's nudges, when there is one
# (`runtimes.watch.nudge` listens here and calls `bump(broadcast=False)`), and, whatever the mode
# or whoever made the change (a CLI beside an embedded server, the admin, another worker), within
# `NODUS_REVOCATION_POLL_SECONDS` (1) through `follow()`: one thread per process reads the stored
# epoch once a second (one read per process, not per stream) and moves the local one when it moved.

log = logging.getLogger("nodus.access")

# A user saved with only these fields changed lost no access (a sign-in records last_login).
HARMLESS_USER_FIELDS = frozenset({"last_login"})

_lock = threading.Lock()
_epoch = 0
_listeners: list[Callable[[], None]] = []


def current() -> int:
    return _epoch


def bump(*, broadcast: bool = True) -> None:
    """Moves the epoch; tells the listeners (other processes) unless it came from one."""
    global _epoch
    with _lock:
        _epoch += 1
    if broadcast:
        for listener in list(_listeners):
            listener()


def listen(listener: Callable[[], None]) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def announce(reason: str) -> None:
    """Access may have been taken away (`reason` says how, for the log): every process's open
    streams check their callers again. Call it inside the transaction that makes the change."""
    log.info("access changed: %s", reason)
    if not AccessEpoch.objects.filter(pk=1).update(value=F("value") + 1):
        AccessEpoch.objects.get_or_create(pk=1, defaults={"value": 1})
    transaction.on_commit(bump)


def stored() -> int | None:
    """The stored epoch (sync: reads the database)."""
    return AccessEpoch.objects.filter(pk=1).values_list("value", flat=True).first()


class StoredEpochReader:
    """Moves this process's epoch when the stored one moved (another process announced)."""

    def __init__(self) -> None:
        self.seen: int | None = None

    def read(self) -> None:
        value = stored()
        if value is not None and self.seen is not None and value != self.seen:
            bump(broadcast=False)
        self.seen = value

    def read_forever(self, every: float) -> None:
        while True:
            try:
                self.read()
                # As after a request: a pooled PostgreSQL connection goes back to the pool
                # (CONN_MAX_AGE 0) rather than being held by this thread; SQLite's is kept.
                close_old_connections()
            except Exception:  # the database away for a moment: the next read catches up
                log.debug("could not read the access epoch", exc_info=True)
                connections.close_all()  # this thread's connections, to reconnect afresh
            time.sleep(every)


_reader: threading.Thread | None = None


def follow() -> None:
    """Starts this process's reader of the stored epoch, once (sync; cheap after the first)."""
    global _reader
    if _reader is not None:
        return
    with _lock:
        if _reader is None:
            every = float(settings.NODUS_REVOCATION_POLL_SECONDS)
            reader = StoredEpochReader()
            _reader = threading.Thread(
                target=reader.read_forever, args=(every,), name="nodus-access-epoch", daemon=True
            )
            _reader.start()


# Receivers take Django's signal arguments by keyword: `sender`, `created`, `update_fields`, ...


def _granted_or_changed(sender: Any, created: bool = False, **kwargs: Any) -> None:
    if not created:  # a new token or role binding grants; only a changed one can take away
        announce(f"{sender.__name__} changed")


def _user_changed(
    created: bool = False, update_fields: Iterable[str] | None = None, **kwargs: Any
) -> None:
    if created:
        return
    if update_fields is not None and set(update_fields) <= HARMLESS_USER_FIELDS:
        return
    announce("user changed")


def _taken_away(sender: Any, **kwargs: Any) -> None:
    announce(f"{getattr(sender, '__name__', 'session')} deleted or signed out")


def connect() -> None:
    """Subscribes to the models' signals (the app's `ready` calls this once)."""
    user_model = settings.AUTH_USER_MODEL
    post_save.connect(_granted_or_changed, sender=ApiToken, dispatch_uid="revocation-token")
    post_save.connect(_granted_or_changed, sender=Membership, dispatch_uid="revocation-member")
    post_save.connect(_user_changed, sender=user_model, dispatch_uid="revocation-user")
    user_logged_out.connect(_taken_away, dispatch_uid="revocation-signed-out")
    for model, uid in (
        (ApiToken, "token"),
        (Membership, "member"),
        (user_model, "user"),
    ):
        post_delete.connect(_taken_away, sender=model, dispatch_uid=f"revocation-{uid}-deleted")
