"""Remembered access lookups (runtimes.accounts.memo): a token's user and a caller's role are
reused while access is unchanged, forgotten the moment it may have changed, never remembered
when nothing was found, and at most NODUS_ACCESS_CACHE_SECONDS old."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import override_settings

from runtimes.accounts import access, memo
from runtimes.accounts.tokens import create_token, revoke, user_for
from runtimes.storage.models import ApiToken, Membership

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def remembering() -> Any:
    with override_settings(NODUS_ACCESS_CACHE_SECONDS=30):
        yield
    memo.forget_all()


def test_a_known_token_is_looked_up_once_then_revoking_it_is_seen_at_once(
    actors: Any, django_assert_num_queries: Any, django_capture_on_commit_callbacks: Any
) -> None:
    row, token = create_token(actors["alice"], "laptop")
    assert user_for(token) == actors["alice"]
    with django_assert_num_queries(0):
        assert user_for(token) == actors["alice"]
    with django_capture_on_commit_callbacks(execute=True):
        revoke(row)
    assert user_for(token) is None


def test_an_unknown_token_is_never_remembered(actors: Any) -> None:
    assert user_for("nodus_not-yet") is None
    assert user_for("nodus_not-yet") is None
    _row, token = create_token(actors["bob"], "new")
    assert user_for(token) == actors["bob"]


def test_a_role_is_forgotten_when_its_binding_goes_and_a_new_one_works_at_once(
    actors: Any, django_assert_num_queries: Any, django_capture_on_commit_callbacks: Any
) -> None:
    bob, demo = actors["bob"], actors["demo"]
    assert access.role_in(bob, "demo") == "viewer"
    with django_assert_num_queries(0):
        assert access.role_in(bob, "demo") == "viewer"
    with django_capture_on_commit_callbacks(execute=True):
        Membership.objects.get(user=bob, project=demo).delete()
    assert access.role_in(bob, "demo") is None
    # A new binding sends no revocation (it grants); nothing refused was remembered.
    Membership.objects.create(user=bob, project=demo, role="editor")
    assert access.role_in(bob, "demo") == "editor"


def test_a_change_no_process_announced_is_seen_within_the_bound(actors: Any) -> None:
    _row, token = create_token(actors["alice"], "ci")
    with override_settings(NODUS_ACCESS_CACHE_SECONDS=0.2):
        assert user_for(token) == actors["alice"]
        # A queryset update sends no signal, as a change made by another process without a
        # channel to this one: only the bound applies.
        ApiToken.objects.filter(name="ci").update(revoked_at="2026-01-01T00:00:00Z")
        time.sleep(0.3)
        assert user_for(token) is None
