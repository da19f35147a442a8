"""Signing in to the console through a real OpenID provider: authorization code with PKCE."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.test import Client

from runtimes.storage.models import Membership, Role
from tests.support.oidc import Provider


def _through_provider(client: Client, provider: Provider) -> tuple[str, dict[str, str]]:
    """Starts a sign-in; returns the callback path and query the provider sends back."""
    started = client.get("/accounts/oidc/login?next=/projects/demo/members")
    assert started.status_code == 302
    asked = parse_qs(urlsplit(started["Location"]).query)
    assert asked["code_challenge_method"] == ["S256"]
    assert asked["response_type"] == ["code"]
    back = httpx.get(started["Location"], follow_redirects=False)
    assert back.status_code == 302
    target = urlsplit(back.headers["Location"])
    return target.path, {k: v[0] for k, v in parse_qs(target.query).items()}


def test_the_sign_in_page_offers_the_provider(provider: Provider, client: Client, db: Any) -> None:
    assert 'id="oidc-sign-in"' in client.get("/login").content.decode()


def test_it_signs_in_and_honours_the_groups_role(
    provider: Provider, client: Client, actors: dict[str, Any]
) -> None:
    Membership.objects.create(project=actors["demo"], group="oidc:ml-admins", role=Role.ADMIN)
    provider.next_user = {"sub": "dana", "groups": ["ml-admins"]}
    path, query = _through_provider(client, provider)
    signed_in = client.get(path, query)
    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/projects/demo/members"
    page = client.get("/projects/demo/members")
    assert page.status_code == 200
    assert "group:oidc:ml-admins" in page.content.decode()


def test_a_user_without_a_bound_group_cannot_manage(
    provider: Provider, client: Client, actors: dict[str, Any]
) -> None:
    provider.next_user = {"sub": "erin", "groups": ["elsewhere"]}
    path, query = _through_provider(client, provider)
    assert client.get(path, query).status_code == 302
    assert client.get("/projects/demo/members").status_code == 404


def test_it_refuses_a_callback_with_another_state(
    provider: Provider, client: Client, actors: dict[str, Any]
) -> None:
    provider.next_user = {"sub": "dana", "groups": []}
    path, query = _through_provider(client, provider)
    assert client.get(path, {**query, "state": "forged"}).status_code == 403
    assert client.get("/account/tokens").status_code == 302  # still signed out


def test_it_refuses_a_code_used_from_another_sign_in(
    provider: Provider, actors: dict[str, Any]
) -> None:
    # The code of one browser's sign-in, sent back by another: that one's PKCE verifier differs.
    provider.next_user = {"sub": "dana", "groups": []}
    victim, attacker = Client(), Client()
    _path, stolen = _through_provider(victim, provider)
    path, own = _through_provider(attacker, provider)
    assert attacker.get(path, {"code": stolen["code"], "state": own["state"]}).status_code == 403


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/x"])
def test_it_never_sends_the_browser_elsewhere(
    provider: Provider, actors: dict[str, Any], target: str
) -> None:
    provider.next_user = {"sub": "dana", "groups": []}
    client = Client()
    started = client.get("/accounts/oidc/login", {"next": target})
    back = httpx.get(started["Location"], follow_redirects=False)
    callback = urlsplit(back.headers["Location"])
    query = {k: v[0] for k, v in parse_qs(callback.query).items()}
    assert client.get(callback.path, query)["Location"] == "/"
