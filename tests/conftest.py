"""Shared fixtures: named actors (alice owns `demo`, bob views it, charlie is an outsider, root
is a platform admin), API clients that authenticate as each with a real bearer token, and live
daphne servers for the tests that talk to one over the network."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from runtimes.accounts import oidc
from runtimes.accounts.oidcconfig import config
from runtimes.accounts.tokens import create_token
from runtimes.storage.models import Membership, Project, Role
from tests.support import liveserver, watch_live
from tests.support import oidc as provider_support
from tests.support.api import ApiClient


@pytest.fixture
def actors(db: Any) -> dict[str, Any]:
    users = get_user_model().objects
    alice = users.create_user("alice", password="alice-pass")
    bob = users.create_user("bob", password="bob-pass")
    charlie = users.create_user("charlie", password="charlie-pass")
    root = users.create_user("root", password="root-pass", is_staff=True, is_superuser=True)
    demo = Project.objects.create(name="demo")
    Membership.objects.create(project=demo, user=alice, role=Role.ADMIN)
    Membership.objects.create(project=demo, user=bob, role=Role.VIEWER)
    return {"alice": alice, "bob": bob, "charlie": charlie, "root": root, "demo": demo}


@pytest.fixture
def api(actors: dict[str, Any]) -> Callable[[str | None], ApiClient]:
    """api("alice") is a client for alice; api(None) is anonymous."""
    tokens: dict[str, str] = {}

    def make(name: str | None) -> ApiClient:
        if name is None:
            return ApiClient(None)
        if name not in tokens:
            tokens[name] = create_token(actors[name], "test")[1]
        return ApiClient(tokens[name])

    return make


# Module scope: each test module gets a server (and a database) of its own, so modules that
# create objects under the same names do not meet.
@pytest.fixture(scope="module")
def daphne_server() -> Iterator[liveserver.LiveServer]:
    """A live daphne with the usual actors (tests/support/liveserver.py)."""
    yield from liveserver.serve("nodus-live-")


@pytest.fixture(scope="module")
def tight_server() -> Iterator[liveserver.LiveServer]:
    """A live daphne whose watch limits are seconds (tests/watch_settings.py)."""
    yield from liveserver.serve("nodus-watch-", watch_live.start_tight)


@pytest.fixture
def provider(settings: Any) -> Iterator[provider_support.Provider]:
    """A real OpenID provider on a loopback port, and the OIDC settings pointing at it."""
    running = provider_support.start()
    settings.NODUS_OIDC_ISSUER_URL = running.issuer
    settings.NODUS_OIDC_CLIENT_ID = provider_support.CLIENT_ID
    settings.NODUS_OIDC_CLIENT_SECRET = provider_support.CLIENT_SECRET
    settings.NODUS_OIDC_USERNAME_PREFIX = "oidc:"
    settings.NODUS_OIDC_GROUPS_PREFIX = "oidc:"
    config.cache_clear()
    oidc.forget_keys()
    yield running
    provider_support.stop(running)
    config.cache_clear()
    oidc.forget_keys()
