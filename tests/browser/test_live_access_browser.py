"""The console's live socket when access goes: the page says why the live updates stopped.

The server closes the socket with 4401 (the user is no longer signed in: deactivated, password
changed, signed out) or 4403 (a project role was removed or lowered); htmx does not reconnect
after those, and static/console/live.js shows the notice with a link to sign in or reload.
"""

from __future__ import annotations

import uuid
from contextlib import closing
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.console import form_fields
from tests.support.manage import add_member, shell
from tests.support.signin import member_id, signed_in, submit

pytestmark = pytest.mark.browser


def test_a_deactivated_user_is_told_to_sign_in_again(session_for: Any) -> None:
    name = f"hugo{uuid.uuid4().hex[:6]}"
    s = session_for()
    add_member(s.server, name, "viewer")
    s.login(name)
    s.wait_live()
    user_id = shell(
        s.server,
        "from django.contrib.auth import get_user_model\n"
        f"print(get_user_model().objects.get(username={name!r}).pk)\n",
    ).strip()
    with closing(signed_in(s.server, "root")) as root:
        change = f"/admin/auth/user/{user_id}/change/"
        page = root.get(change).text
        form = form_fields(page, is_active=None, groups=None, user_permissions=None)
        form["_save"] = "Save"
        assert submit(root, change, form).status_code == 302
    notice = s.page.locator("#live-notice")
    expect(notice).to_contain_text("you are no longer signed in", timeout=5_000)
    expect(s.page.locator("#live")).to_have_attribute("data-state", "closed")
    expect(notice.locator("a")).to_have_attribute("href", "/login?next=%2F")
    s.shot("live-signed-out")


def test_a_removed_member_is_told_their_access_changed(session_for: Any) -> None:
    name = f"ivan{uuid.uuid4().hex[:6]}"
    s = session_for()
    add_member(s.server, name, "viewer")
    s.login(name)
    s.go("/?project=demo")
    s.wait_live()
    with closing(signed_in(s.server, "alice")) as alice:
        binding = member_id(alice.get("/projects/demo/members").text, name)
        removed = submit(alice, "/projects/demo/members", {"action": "remove", "member": binding})
        assert removed.status_code == 302
    notice = s.page.locator("#live-notice")
    expect(notice).to_contain_text("your access changed", timeout=5_000)
    expect(notice.locator("a")).to_contain_text("Reload")
    s.shot("live-access-changed")
