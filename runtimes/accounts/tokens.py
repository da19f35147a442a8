"""API tokens: created once, shown once, stored only as a SHA-256 digest, revocable."""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, connections, transaction
from django.utils import timezone

from runtimes.accounts import oidc, revocation
from runtimes.accounts.memo import EpochMemo
from runtimes.storage.models import ApiToken

log = logging.getLogger("nodus.tokens")

PREFIX = "nodus_"
# digest -> its user, while the access epoch stands; see accounts.memo.
_known = EpochMemo()


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """Returns the stored row and the token itself, which is never stored or shown again."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user_id=user.pk, name=name, digest=digest(token), prefix=token[: len(PREFIX) + 6]
    )
    return row, token


def remembered(token: str) -> AbstractBaseUser | None:
    """The token's user when it was looked up a moment ago (memory only), else None."""
    if oidc.looks_like_id_token(token):
        return oidc.remembered(digest(token))
    user: AbstractBaseUser | None = _known.get(digest(token))
    return user


def user_for(token: str) -> AbstractBaseUser | None:
    """The user of an API token or, with OIDC on, of a provider's ID token; None if refused."""
    key = digest(token)
    if oidc.looks_like_id_token(token):
        return oidc.user_for(token, key)
    epoch = revocation.current()
    now = timezone.now()
    user = _known.get(key)
    if user is not None:
        return user  # type: ignore[no-any-return]
    # One prepared statement, not a query built by the ORM: a herd of informers, each with a
    # token of its own, spent a fifth of the process's time building this lookup.
    with connection.cursor() as cursor:
        cursor.execute(_TOKEN_SQL, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, user_id = row
    user = _active_user(user_id, epoch)
    if user is None:
        return None
    _touches.note(token_id, now)  # in memory; written with the others every few seconds
    _known.put(key, user, epoch)
    return user


_TOKEN_SQL = (
    f"SELECT id, user_id FROM {ApiToken._meta.db_table} "  # noqa: S608 (names, not input)
    "WHERE digest = %s AND revoked_at IS NULL"
)
# user id -> the active user, while the access epoch stands (a deactivation moves it).
_users = EpochMemo()


def _active_user(user_id: int, epoch: int) -> AbstractBaseUser | None:
    user = _users.get(user_id)
    if user is None:
        user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
        _users.put(user_id, user, epoch)
    return user  # type: ignore[no-any-return]


class _Touches:
    """`last_used_at` writes, off the request path: a read is never a write transaction (on
    SQLite every write waits for the one writer). Noted tokens are written together every
    `NODUS_TOKEN_TOUCH_SECONDS` (10) by a thread of their own, which holds no database
    connection between its writes; 0 writes at once. At most that long of "last used" is lost
    if the process dies."""

    def __init__(self) -> None:
        self._due: dict[int, datetime] = {}
        self._noted: dict[int, datetime] = {}  # when each token's use was last noted here
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @staticmethod
    def every() -> float:
        return float(settings.NODUS_TOKEN_TOUCH_SECONDS)

    def note(self, pk: int, when: datetime) -> None:
        """Notes a use; one a minute per token is enough to tell stale tokens from live ones."""
        with self._lock:
            last = self._noted.get(pk)
            if last is not None and (when - last).total_seconds() < 60:
                return
            if len(self._noted) >= 10_000:
                self._noted.clear()
            self._noted[pk] = when
        if self.every() <= 0:
            ApiToken.objects.filter(pk=pk).update(last_used_at=when)
            return
        with self._lock:
            self._due[pk] = when
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="nodus-token-touches", daemon=True
                )
                self._thread.start()

    def flush(self) -> None:
        with self._lock:
            due, self._due = self._due, {}
        if due:
            # In the tokens' order: workers flushing at once take the rows' locks in one order,
            # so none waits for another in a cycle. In noted order, the scale-out herd's four
            # workers (tokens shared) logged PostgreSQL's DeadlockDetected, a batch lost each.
            with transaction.atomic():
                for pk, when in sorted(due.items()):
                    ApiToken.objects.filter(pk=pk).update(last_used_at=when)

    def _run(self) -> None:
        while True:
            time.sleep(self.every())
            try:
                self.flush()
            except Exception:  # the database is away: these few are lost, the next go through
                log.warning("could not record when tokens were last used", exc_info=True)
            finally:
                connections.close_all()  # this thread's: it sleeps without one


_touches = _Touches()


def flush_uses() -> None:
    """Writes the uses noted since the last batch now, not within NODUS_TOKEN_TOUCH_SECONDS:
    a server shutting down calls it, so a restart loses none."""
    _touches.flush()


def revoke(row: ApiToken) -> None:
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
