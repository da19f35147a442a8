"""The revocation epoch: a counter that moves whenever access may have been taken away.

Open streams (HTTP and WebSocket watches, the console's socket) checked their caller once, when
they opened. To notice a revoked token, a removed or lowered role binding, or a deactivated user,
each stream remembers the epoch it last checked at and checks its caller again once the epoch
has moved (`runtimes.watch.guard`). Reading the epoch costs nothing, so the checks that touch
the database happen only after such a change, never once per stream per second.

The epoch moves after the change commits (a stream that checked before the commit would still
see the old rows), on saves and deletes of `ApiToken`, `Membership` and the user model; a user
saved only to record a sign-in moves nothing. Signing out moves it too (Django sends
`user_logged_out` just before it deletes the session; a stream that checks in between is caught
by its backstop check). Other processes learn of a change through the
channel layer's nudges (`runtimes.watch.nudge` listens here and calls `bump(broadcast=False)`
when another process says so).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from runtimes.storage.models import ApiToken, Membership

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


def _after_commit() -> None:
    transaction.on_commit(bump)


# Receivers take Django's signal arguments by keyword: `created`, `update_fields`, ...


def _granted_or_changed(created: bool = False, **kwargs: Any) -> None:
    if not created:  # a new token or role binding grants; only a changed one can take away
        _after_commit()


def _user_changed(
    created: bool = False, update_fields: Iterable[str] | None = None, **kwargs: Any
) -> None:
    if created:
        return
    if update_fields is not None and set(update_fields) <= HARMLESS_USER_FIELDS:
        return
    _after_commit()


def _taken_away(**kwargs: Any) -> None:
    _after_commit()


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
