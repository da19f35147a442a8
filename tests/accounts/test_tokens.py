"""API tokens: shown once, stored as a digest, refused once revoked or their user is inactive."""

from __future__ import annotations

from typing import Any

from runtimes.accounts.tokens import PREFIX, create_token, digest, revoke, user_for
from runtimes.storage.models import ApiToken


def test_it_stores_only_the_digest_and_a_prefix(actors: dict[str, Any]) -> None:
    row, token = create_token(actors["alice"], "laptop")
    assert token.startswith(PREFIX)
    stored = ApiToken.objects.get(pk=row.pk)
    assert stored.digest == digest(token)
    assert token not in {stored.digest, stored.prefix}
    assert token.startswith(stored.prefix)


def test_it_finds_the_user_of_a_live_token(actors: dict[str, Any]) -> None:
    _, token = create_token(actors["alice"], "laptop")
    user = user_for(token)
    assert user is not None
    assert user.get_username() == "alice"


def test_it_knows_no_made_up_token(actors: dict[str, Any]) -> None:
    assert user_for(PREFIX + "made-up") is None


def test_it_refuses_a_revoked_token(actors: dict[str, Any]) -> None:
    row, token = create_token(actors["bob"], "old")
    revoke(row)
    assert user_for(token) is None


def test_it_refuses_the_token_of_an_inactive_user(actors: dict[str, Any]) -> None:
    _, token = create_token(actors["charlie"], "ci")
    actors["charlie"].is_active = False
    actors["charlie"].save()
    assert user_for(token) is None
