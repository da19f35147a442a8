"""The audit log page: platform admins only, filtered by user, object and verb."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from runtimes.accounts import auditlog
from tests.support import audit
from tests.support.api import ApiClient
from tests.support.oidc import Provider


@pytest.fixture
def audit_log(settings: Any, tmp_path: Path) -> Path:
    return audit.fresh_log(settings, tmp_path)


def _page(who: Any, **query: str) -> Any:
    auditlog.flush()
    client = Client()
    client.force_login(who)
    return client.get("/audit", query)


def test_only_platform_admins_read_it(actors: dict[str, Any], audit_log: Path) -> None:
    assert _page(actors["alice"]).status_code == 404
    assert Client().get("/audit").status_code == 302  # to the sign-in page
    assert _page(actors["root"]).status_code == 200


def test_it_filters_by_user_object_and_verb(
    api: Any, actors: dict[str, Any], audit_log: Path
) -> None:
    api("bob").get("/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes")
    api("bob").delete("/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes/kept")
    api("charlie").get("/api/v1/namespaces")
    rows = _page(actors["root"], user="bob", verb="delete", object="kept").content.decode()
    assert rows.count("<tr>") == 2  # the header and one event
    assert "demo/trainingruntimes/kept" in rows
    everyone = _page(actors["root"]).content.decode()
    assert "charlie" in everyone
    assert "charlie" not in _page(actors["root"], user="bob").content.decode()


def test_it_escapes_what_an_identity_provider_sent(
    provider: Provider, actors: dict[str, Any], audit_log: Path
) -> None:
    token = provider.id_token("<script>alert(1)</script>")
    ApiClient(token).get("/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes")
    page = _page(actors["root"]).content.decode()
    assert "oidc:&lt;script&gt;alert(1)" in page
    assert "<script>alert(1)" not in page
