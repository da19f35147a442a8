"""Shared fixtures: named actors (alice owns `demo`, bob views it, charlie is an outsider, root
is a platform admin), API clients that authenticate as each with a real bearer token, and live
daphne servers for the tests that talk to one over the network."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from runtimes.accounts import memo, oidc, throttling
from runtimes.accounts.oidcconfig import config
from runtimes.accounts.tokens import create_token
from runtimes.storage.models import Membership, Project, Role
from runtimes.watch import hub
from tests.support import liveserver, watch_live
from tests.support import oidc as provider_support
from tests.support.api import ApiClient


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the database commits its writes, as requests do when shipped: the
    view pool's threads and the hub's, on connections of their own, see them, and the watch
    cache answers the test's reads. The rows the migrations seed come back after each test."""
    for item in items:
        marker = item.get_closest_marker("django_db")
        if marker is None and "db" not in getattr(item, "fixturenames", ()):
            continue
        kwargs = {**(marker.kwargs if marker else {}), "transaction": True}
        kwargs["serialized_rollback"] = True
        item.add_marker(pytest.mark.django_db(**kwargs), append=False)  # the closest


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's, and before it drops the test database, the sessions the server's
    threads left open end (PostgreSQL's pool keeps some; a daemon thread may hold one), or
    the drop would find them."""
    yield
    hub.shutdown()
    for connection in connections.all(initialized_only=True):
        if connection.vendor != "postgresql":
            continue
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        if getattr(connection, "pool", None) is not None:
            connection.close_pool()


@pytest.fixture(autouse=True)
def _store_recreated() -> Iterator[None]:
    """Each test's store is emptied after it: what the process remembers of it goes too (the
    hub and its watch cache, remembered tokens and roles, failed tokens counted against the
    test client's address), as after a restore."""
    yield
    hub.shutdown()
    memo.forget_all()
    throttling.limiter().reset()


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
