"""Open streams keep checking their caller: revocation reaches watches and websockets."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.base import SessionBase
from django.utils.crypto import constant_time_compare

from runtimes.accounts import revocation
from runtimes.accounts.access import User, groups_of
from runtimes.accounts.tokens import user_for
from runtimes.apimachinery import errors
from runtimes.storage.eventlog import run_db
from runtimes.watch import nudge

# A stream (an HTTP or WebSocket watch, the console's socket) is authorized when it opens and may
# then run for an hour. A `StreamGuard` goes with it: the stream asks `verdict()` at least every
# `POLL_SECONDS`, and the guard checks the caller again when the revocation epoch has moved
# (`accounts.revocation`: a token revoked, a role binding removed or changed, a user deactivated,
# here or in another process: a CLI, the admin, another worker, told through the nudges and the
# stored epoch each process reads once a second) and, as a backstop for changes nobody announced
# (a raw SQL update), every `RECHECK_SECONDS`.
# A verdict that is not None ends the stream: 401 when the credentials no longer resolve to an
# active user, else the Status the stream's own recheck raised (403 when a role fell short).
#
# Cost: asking is an integer comparison; a check is one or two indexed queries, made per stream
# only after an access change or once per backstop interval.

# How often a stream asks (an in-memory comparison): revocation ends a stream within this plus
# one check's time, well inside the five seconds promised.
POLL_SECONDS = 1.0
# The backstop: every stream checks its caller this often, whatever the epoch says.
RECHECK_SECONDS = 30.0

UNAUTHORIZED_FIX = (
    "The token was revoked, the account deactivated or the session ended: get a fresh token "
    "(console Tokens page or `python manage.py kubeconfig --user NAME`) or sign in again, then "
    "watch again."
)


@dataclass(frozen=True)
class Credential:
    """How a stream's caller proved who they are: a bearer token, or a session."""

    token: str | None = None
    user_id: Any = None
    session_key: str | None = None
    session_hash: str = ""
    # An OIDC session's groups (from its ID token at sign-in): its role bindings still apply.
    groups: tuple[str, ...] = ()

    @classmethod
    def bearer(cls, token: str) -> Credential:
        return cls(token=token)

    @classmethod
    def session(cls, user: Any, session: SessionBase | None) -> Credential:
        hash_ = user.get_session_auth_hash() if hasattr(user, "get_session_auth_hash") else ""
        key = session.session_key if session is not None else None
        return cls(user_id=user.pk, session_key=key, session_hash=hash_, groups=groups_of(user))

    def resolve(self) -> User | None:
        """The active user these credentials still stand for, or None (sync: reads the db)."""
        if self.token is not None:
            return user_for(self.token)
        user = get_user_model().objects.filter(pk=self.user_id, is_active=True).first()
        if user is None:
            return None
        # A changed password ends the sessions it signed (Django's session hash), and signing
        # out deletes the session.
        if self.session_hash and not constant_time_compare(
            user.get_session_auth_hash(), self.session_hash
        ):
            return None
        if self.session_key is not None and not _session_exists(self.session_key):
            return None
        if self.groups:
            user.nodus_groups = self.groups  # type: ignore[attr-defined]
        return user


def _session_exists(key: str) -> bool:
    from importlib import import_module

    engine = import_module(settings.SESSION_ENGINE)
    store: SessionBase = engine.SessionStore()
    return bool(store.exists(key))


def credentials_revoked() -> errors.ApiError:
    return errors.ApiError(
        "Unauthorized",
        "Unauthorized: the credentials this stream was opened with are no longer valid",
        fix=UNAUTHORIZED_FIX,
    )


class StreamGuard:
    """One stream's watch over its caller's access; `recheck(user)` raises the Status that ends
    it (the stream's own authorization, e.g. `registry.authorization.check`). Made off the event
    loop (it may start the process's nudger)."""

    def __init__(
        self,
        credential: Credential,
        recheck: Callable[[Any], None],
        *,
        every: float | None = None,
    ) -> None:
        self.credential = credential
        self.recheck = recheck
        self.every = float(every if every is not None else settings.NODUS_STREAM_RECHECK_SECONDS)
        self.poll = float(settings.NODUS_STREAM_POLL_SECONDS)
        self.epoch = revocation.current()
        self.checked_at = time.monotonic()
        # Other processes announce their access changes through this process's nudger: make
        # sure it listens (a worker with only a console socket open may have no hub yet). Sync:
        # the first call starts its thread.
        nudge.process_nudger()
        # And whatever the mode, through the stored epoch (a CLI beside an embedded server).
        revocation.follow()

    def due(self) -> bool:
        return (
            revocation.current() != self.epoch or time.monotonic() - self.checked_at >= self.every
        )

    def check(self) -> errors.ApiError | None:
        """Checks now (sync: reads the database)."""
        user = self.credential.resolve()
        if user is None:
            return credentials_revoked()
        try:
            self.recheck(user)
        except errors.ApiError as error:
            return error
        return None

    async def verdict(self) -> errors.ApiError | None:
        """None while the caller may go on; the Status that ends the stream otherwise."""
        if not self.due():
            return None
        # Read before checking: a change that lands during the check moves it again.
        epoch = revocation.current()
        error: errors.ApiError | None = await run_db(self.check)
        self.epoch, self.checked_at = epoch, time.monotonic()
        return error
