"""API tokens: created once, shown once, stored only as a SHA-256 digest, revocable."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from runtimes.accounts import revocation
from runtimes.accounts.memo import EpochMemo
from runtimes.storage.models import ApiToken

PREFIX = "nodus_"
# digest -> (user, when last_used_at was last written); see accounts.memo.
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


def user_for(token: str) -> AbstractBaseUser | None:
    key = digest(token)
    epoch = revocation.current()
    now = timezone.now()
    # Writing last_used on every request would turn every read into a write; once a minute is
    # enough to tell stale tokens from live ones. A remembered token due for that write is
    # looked up again, so the write follows a fresh check.
    known = _known.get(key)
    if known is not None and (now - known[1]).total_seconds() <= 60:
        return known[0]  # type: ignore[no-any-return]
    row = (
        ApiToken.objects.select_related("user")
        .filter(digest=key, revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if row is None:
        return None
    last_used = row.last_used_at
    if last_used is None or (now - last_used).total_seconds() > 60:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        last_used = now
    _known.put(key, (row.user, last_used), epoch)
    return row.user


def revoke(row: ApiToken) -> None:
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
