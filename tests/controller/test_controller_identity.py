"""The controller writes status as its own service account, checked as any client's write.

Its account and token are made on first use (the token kept in DATA_DIR, mode 0600); revoking
the token or deactivating the account stops its writes with 401, and an identity without the
status permission (a project admin's) is refused with 403. Nothing is written in either case.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from runtimes.accounts import serviceaccounts
from runtimes.accounts.access import CONTROLLER_ACCOUNT, allowed, may_write_status
from runtimes.accounts.serviceaccounts import ServiceAccount
from runtimes.accounts.tokens import create_token, revoke
from runtimes.apimachinery import errors
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.reconcile import Reconciler
from runtimes.controller.settings import TrustedKeys
from runtimes.storage.models import ApiToken
from tests.support.controller import (
    LAYOUT_REGISTRY,
    World,
    create_runtime,
    make_world,
    publish,
    status_of,
)


@pytest.fixture
def world(db: Any, tmp_path: Path, settings: Any) -> World:
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    settings.NODUS_CONTROLLER_TOKEN = ""
    return make_world(tmp_path)


def reconciler(world: World, account: ServiceAccount | None = None) -> Reconciler:
    config = world.config
    sources = ImageSources(config.layout_root, config.registry)
    return Reconciler(sources, TrustedKeys(config.trusted_key_paths).current, account=account)


def runtime(world: World, name: str) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/examples/{name}:0.1", user=None)
    create_runtime("demo", name, image)


def test_it_writes_as_its_service_account_made_on_first_use(world: World) -> None:
    runtime(world, "first")
    outcome = reconciler(world).reconcile("demo", "first")
    assert outcome.written
    assert status_of("demo", "first")["phase"] == "Ready"
    account = get_user_model().objects.get(username=CONTROLLER_ACCOUNT)
    assert not account.has_usable_password()
    assert not account.is_staff
    assert may_write_status(account)
    assert allowed(account, "list", "demo")
    assert not allowed(account, "patch", "demo")
    kept = serviceaccounts.token_path()
    assert oct(os.stat(kept).st_mode & 0o777) == "0o600"
    [row] = ApiToken.objects.filter(user=account)
    assert row.name == "controller"
    # A second start reuses the kept token rather than making another.
    runtime(world, "second")
    reconciler(world).reconcile("demo", "second")
    assert ApiToken.objects.filter(user=account).count() == 1


def test_a_revoked_token_stops_its_writes(world: World) -> None:
    runtime(world, "revoked")
    token = serviceaccounts.controller_token()
    revoke(ApiToken.objects.get(user__username=CONTROLLER_ACCOUNT))
    with pytest.raises(errors.ApiError) as refused:
        reconciler(world).reconcile("demo", "revoked")
    assert refused.value.reason == "Unauthorized"
    assert status_of("demo", "revoked")["phase"] == "Pending"
    # The revoked token is kept, not silently replaced: the admin meant the controller to stop.
    assert serviceaccounts.controller_token() == token


def test_a_deactivated_account_stops_its_writes(world: World) -> None:
    runtime(world, "inactive")
    serviceaccounts.controller_token()
    get_user_model().objects.filter(username=CONTROLLER_ACCOUNT).update(is_active=False)
    with pytest.raises(errors.ApiError) as refused:
        reconciler(world).reconcile("demo", "inactive")
    assert refused.value.reason == "Unauthorized"
    assert status_of("demo", "inactive")["phase"] == "Pending"


def test_an_identity_without_the_status_permission_is_forbidden(
    actors: dict[str, Any], world: World
) -> None:
    runtime(world, "forged")
    _row, token = create_token(actors["alice"], "not the controller")
    with pytest.raises(errors.ApiError) as refused:
        reconciler(world, ServiceAccount(token)).reconcile("demo", "forged")
    assert refused.value.reason == "Forbidden"
    assert 'cannot patch resource "trainingruntimes/status"' in refused.value.message
    assert status_of("demo", "forged")["phase"] == "Pending"
