"""API tokens: created once, shown once, stored only as a SHA-256 digest, revocable."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from runtimes.storage.models import ApiToken

PREFIX = "nodus_"


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
    row = (
        ApiToken.objects.select_related("user")
        .filter(digest=digest(token), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if row is None:
        return None
    now = timezone.now()
    # Writing last_used on every request would turn every read into a write; once a minute is
    # enough to tell stale tokens from live ones.
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user


def revoke(row: ApiToken) -> None:
    if row.revoked_at is None:
        row.revoked_at = timezone.now()
        row.save(update_fields=["revoked_at"])
