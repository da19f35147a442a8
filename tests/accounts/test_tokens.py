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


def test_a_flush_of_last_used_times_locks_the_tokens_in_one_order(
    actors: dict[str, Any], settings: Any
) -> None:
    """Workers that flush at once must take the rows' locks in the same order, or PostgreSQL
    aborts one batch as a deadlock: tokens noted in any order are written by ascending key."""
    from datetime import UTC, datetime

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runtimes.accounts.tokens import _Touches

    rows = [ApiToken.objects.get(digest=digest(create_token(actors["alice"], f"t{n}")[1]))
            for n in range(4)]  # fmt: skip
    settings.NODUS_TOKEN_TOUCH_SECONDS = 3600  # the batching thread waits; we flush by hand
    touches = _Touches()
    when = datetime(2026, 12, 6, tzinfo=UTC)
    for row in [rows[2], rows[0], rows[3], rows[1]]:
        touches.note(row.pk, when)
    with CaptureQueriesContext(connection) as queries:
        touches.flush()
    updated = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert [sql.endswith(f'"id" = {row.pk}') for row, sql in zip(rows, updated, strict=True)] == [
        True
    ] * 4
    assert all(r.last_used_at == when for r in ApiToken.objects.filter(pk__in=[r.pk for r in rows]))


def test_the_batching_thread_writes_a_noted_use_on_its_own(
    actors: dict[str, Any], settings: Any
) -> None:
    import time
    from datetime import UTC, datetime

    from runtimes.accounts.tokens import _Touches

    row = ApiToken.objects.get(digest=digest(create_token(actors["alice"], "batched")[1]))
    settings.NODUS_TOKEN_TOUCH_SECONDS = 0.05
    when = datetime(2026, 12, 6, 11, tzinfo=UTC)
    _Touches().note(row.pk, when)
    deadline = time.monotonic() + 10
    while ApiToken.objects.get(pk=row.pk).last_used_at is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ApiToken.objects.get(pk=row.pk).last_used_at == when
