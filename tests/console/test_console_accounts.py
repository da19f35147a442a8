"""Tokens (shown once, revocable), kubeconfig download, projects and membership management."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from runtimes.accounts.tokens import user_for
from runtimes.storage.models import ApiToken, Membership
from tests.support.console import client_for

pytestmark = pytest.mark.django_db


def test_it_creates_a_token_and_shows_it_once(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    body = client.post("/account/tokens", {"name": "laptop"}).content.decode()
    token = re.search(r'<pre class="code" id="new-token">([^<]+)</pre>', body).group(1)
    assert user_for(token) == actors["alice"]
    again = client.get("/account/tokens").content.decode()
    assert token not in again
    assert "laptop" in again


def test_it_revokes_a_token(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    body = client.post("/account/tokens", {"name": "old"}).content.decode()
    token = re.search(r'id="new-token">([^<]+)<', body).group(1)
    row = ApiToken.objects.get(user=actors["alice"], name="old")
    client.post(f"/account/tokens/{row.pk}/revoke")
    assert user_for(token) is None


def test_it_asks_before_revoking_and_says_it_did(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    token = re.search(
        r'id="new-token">([^<]+)<', client.post("/account/tokens", {"name": "ci"}).content.decode()
    ).group(1)
    row = ApiToken.objects.get(user=actors["alice"], name="ci")
    listing = client.get("/account/tokens").content.decode()
    # The list offers a link to the confirmation, not a form that revokes at once.
    assert f'href="/account/tokens/{row.pk}/revoke"' in listing
    assert f'action="/account/tokens/{row.pk}/revoke"' not in listing
    confirm = client.get(f"/account/tokens/{row.pk}/revoke").content.decode()
    assert "Revoke token" in confirm
    assert f'action="/account/tokens/{row.pk}/revoke"' in confirm
    assert user_for(token) == actors["alice"]  # asking changed nothing
    done = client.post(f"/account/tokens/{row.pk}/revoke", follow=True).content.decode()
    assert user_for(token) is None
    assert re.search(r'class="toast success" data-message>Token ci revoked', done)
    # Asking again about a revoked token says so instead of offering to revoke it.
    again = client.get(f"/account/tokens/{row.pk}/revoke", follow=True).content.decode()
    assert "Token ci was already revoked" in again


def test_it_never_revokes_someone_elses_token(actors: dict[str, Any]) -> None:
    client_for(actors["alice"]).post("/account/tokens", {"name": "mine"})
    row = ApiToken.objects.get(user=actors["alice"], name="mine")
    assert client_for(actors["bob"]).post(f"/account/tokens/{row.pk}/revoke").status_code == 404
    assert client_for(actors["bob"]).get(f"/account/tokens/{row.pk}/revoke").status_code == 404
    row.refresh_from_db()
    assert row.revoked_at is None


def test_it_downloads_a_kubeconfig_with_a_working_token(actors: dict[str, Any]) -> None:
    response = client_for(actors["alice"]).post("/account/kubeconfig")
    assert "attachment" in response["Content-Disposition"]
    config = yaml.safe_load(response.content)
    assert config["contexts"][0]["context"]["namespace"] == "demo"
    assert user_for(config["users"][0]["user"]["token"]) == actors["alice"]


def test_it_offers_member_management_only_to_project_admins(actors: dict[str, Any]) -> None:
    assert b"/projects/demo/members" in client_for(actors["alice"]).get("/projects").content
    assert b"/projects/demo/members" not in client_for(actors["bob"]).get("/projects").content
    assert client_for(actors["bob"]).get("/projects/demo/members").status_code == 404
    assert client_for(actors["root"]).get("/projects/demo/members").status_code == 200


def test_it_adds_changes_and_removes_members(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    client.post(
        "/projects/demo/members", {"action": "add", "username": "charlie", "role": "editor"}
    )
    member = Membership.objects.get(project_id="demo", user=actors["charlie"])
    assert member.role == "editor"
    client.post("/projects/demo/members", {"action": "role", "member": member.pk, "role": "viewer"})
    member.refresh_from_db()
    assert member.role == "viewer"
    client.post("/projects/demo/members", {"action": "remove", "member": member.pk})
    assert not Membership.objects.filter(project_id="demo", user=actors["charlie"]).exists()


def test_it_binds_a_group_to_a_role_and_lists_it(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    added = client.post(
        "/projects/demo/members", {"action": "add", "group": "oidc:ml-team", "role": "editor"}
    )
    assert added.status_code == 302
    binding = Membership.objects.get(project_id="demo", group="oidc:ml-team")
    assert (binding.user, binding.role) == (None, "editor")
    page = client.get("/projects/demo/members").content.decode()
    assert '<th scope="row">group:oidc:ml-team</th>' in page
    client.post("/projects/demo/members", {"action": "remove", "member": binding.pk})
    assert not Membership.objects.filter(project_id="demo", group="oidc:ml-team").exists()


def test_a_binding_names_a_user_or_a_group_never_both(actors: dict[str, Any]) -> None:
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(
            project=actors["demo"], user=actors["charlie"], group="oidc:x", role="viewer"
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(project=actors["demo"], role="viewer")


def test_it_asks_before_removing_a_member_and_says_what_changed(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    added = client.post(
        "/projects/demo/members",
        {"action": "add", "username": "charlie", "role": "viewer"},
        follow=True,
    ).content.decode()
    assert "charlie is now viewer in demo" in added
    member = Membership.objects.get(project_id="demo", user=actors["charlie"])
    assert f'href="/projects/demo/members/{member.pk}/remove"' in added
    confirm = client.get(f"/projects/demo/members/{member.pk}/remove").content.decode()
    assert 'Remove <span class="mono">charlie</span> from demo?' in confirm
    assert f'name="member" value="{member.pk}"' in confirm
    assert Membership.objects.filter(pk=member.pk).exists()  # asking changed nothing
    form = dict(re.findall(r'name="(action|member)" value="([^"]*)"', confirm))
    done = client.post("/projects/demo/members", form, follow=True).content.decode()
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert "Removed charlie from demo." in done


def test_it_hides_the_removal_page_from_non_admins(actors: dict[str, Any]) -> None:
    member = Membership.objects.get(project_id="demo", user=actors["bob"])
    assert (
        client_for(actors["bob"]).get(f"/projects/demo/members/{member.pk}/remove").status_code
        == 404
    )
    assert client_for(actors["alice"]).get("/projects/demo/members/0/remove").status_code == 404


def test_it_keeps_the_last_admin(actors: dict[str, Any]) -> None:
    client = client_for(actors["alice"])
    mine = Membership.objects.get(project_id="demo", user=actors["alice"])
    body = client.post("/projects/demo/members", {"action": "remove", "member": mine.pk}).content
    assert b"keeps at least one admin" in body
    assert Membership.objects.filter(pk=mine.pk).exists()


def test_it_offers_publish_in_the_navigation_only_to_editors(actors: dict[str, Any]) -> None:
    from django.test import RequestFactory

    from runtimes.console.context import console

    def can_publish(who: str) -> bool:
        request = RequestFactory().get("/")
        request.user = actors[who]
        return bool(console(request)["nav"]["can_publish"])

    assert can_publish("alice")
    assert can_publish("root")
    assert not can_publish("bob")
    assert not can_publish("charlie")
