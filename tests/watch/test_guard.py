"""Stream guards and the revocation epoch: what moves the epoch, and what a recheck decides.

The epoch moves after a commit that may take access away (a token revoked or deleted, a role
binding changed or removed, a user changed or deleted) and not for what only grants or records
(a new token or membership, a sign-in). A guard asks the database only once the epoch has moved
or its backstop interval has passed; its verdict is 401 once the credentials stop resolving to
an active user, else what the stream's own recheck raises.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import update_last_login
from django.contrib.sessions.backends.db import SessionStore
from django.test import Client

from runtimes.accounts import revocation
from runtimes.accounts.tokens import create_token, revoke
from runtimes.apimachinery import errors
from runtimes.registry import authorization
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage.models import ApiToken, Membership, Role
from runtimes.watch.guard import Credential, StreamGuard

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

WATCH_DEMO = authorization.role({authorization.WATCH: "watch"})


def watching_demo(user: Any) -> None:
    authorization.check(user, WATCH_DEMO, authorization.WATCH, "demo", kind=TRAINING_RUNTIMES)


def moved(change: Any) -> bool:
    before = revocation.current()
    change()
    return revocation.current() != before


def test_the_epoch_moves_when_access_may_have_gone(actors: dict[str, Any]) -> None:
    alice, bob = actors["alice"], actors["bob"]
    row, _token = create_token(alice, "t")
    assert moved(lambda: revoke(row))
    assert moved(lambda: ApiToken.objects.filter(pk=row.pk).delete())
    membership = Membership.objects.get(user=bob, project_id="demo")
    membership.role = Role.EDITOR
    assert moved(lambda: membership.save(update_fields=["role"]))
    assert moved(membership.delete)
    bob.is_active = False
    assert moved(bob.save)
    assert moved(actors["charlie"].delete)
    browser = Client()
    browser.force_login(alice)
    assert moved(browser.logout)


def test_the_epoch_stays_for_what_only_grants_or_records(actors: dict[str, Any]) -> None:
    alice = actors["alice"]
    assert not moved(lambda: create_token(alice, "new"))
    assert not moved(lambda: Membership.objects.create(user=actors["charlie"], project_id="demo"))
    assert not moved(lambda: update_last_login(None, alice))
    assert not moved(lambda: get_user_model().objects.create_user("newcomer"))


async def test_a_guard_rechecks_only_after_the_epoch_moved(actors: dict[str, Any]) -> None:
    from asgiref.sync import sync_to_async

    row, token = await sync_to_async(create_token)(actors["bob"], "watching")
    guard = StreamGuard(Credential.bearer(token), watching_demo, every=3600)
    assert not guard.due()
    assert await guard.verdict() is None
    await sync_to_async(revoke)(row)
    assert guard.due()
    error = await guard.verdict()
    assert error is not None
    assert (error.reason, error.code) == ("Unauthorized", 401)


async def test_a_guard_relays_the_streams_own_refusal(actors: dict[str, Any]) -> None:
    from asgiref.sync import sync_to_async

    _row, token = await sync_to_async(create_token)(actors["bob"], "watching")
    guard = StreamGuard(Credential.bearer(token), watching_demo, every=3600)
    await sync_to_async(Membership.objects.filter(user=actors["bob"]).delete)()
    error = await guard.verdict()
    assert isinstance(error, errors.ApiError)
    assert (error.reason, error.code) == ("Forbidden", 403)
    assert 'User "bob" cannot watch resource "trainingruntimes"' in error.message


def test_a_backstop_check_comes_due_without_any_change(actors: dict[str, Any]) -> None:
    _row, token = create_token(actors["bob"], "watching")
    guard = StreamGuard(Credential.bearer(token), watching_demo, every=0)
    assert guard.due()
    assert guard.check() is None


def test_a_session_ends_with_sign_out_password_change_or_deactivation(
    actors: dict[str, Any],
) -> None:
    bob = actors["bob"]

    def new_session() -> SessionStore:
        session = SessionStore()
        session.create()
        return session

    session = new_session()
    credential = Credential.session(bob, session)
    assert credential.resolve() == bob
    session.delete()
    assert credential.resolve() is None  # signed out
    credential = Credential.session(bob, new_session())
    bob.set_password("another")
    bob.save()
    assert credential.resolve() is None  # the password changed
    credential = Credential.session(bob, new_session())
    bob.is_active = False
    bob.save()
    assert credential.resolve() is None


@pytest.mark.services
def test_access_changes_reach_other_processes_over_redis(settings: Any) -> None:
    import threading
    import time

    from runtimes.watch.nudge import Nudger
    from tests.support import services

    services.require_redis()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/3"]},
        }
    }
    heard_revisions: list[int] = []
    sender, receiver = Nudger(), Nudger(heard_revisions.append)
    sender.start()
    receiver.start()
    try:
        before = revocation.current()
        deadline = time.monotonic() + 10
        while revocation.current() == before and time.monotonic() < deadline:
            sender.note_access()  # until the receiver has joined the group
            threading.Event().wait(0.3)
        # The receiver moved the epoch (the two share this process's, standing in for two).
        assert revocation.current() > before
        assert heard_revisions == []  # an access change is not a revision
    finally:
        sender.stop()
        receiver.stop()
