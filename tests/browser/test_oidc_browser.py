"""Chromium signs in to the console through a real OpenID provider and uses a group's role."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.support import oidc as oidc_support
from tests.support.liveserver import LiveServer
from tests.support.manage import shell

from .conftest import Session

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def provider() -> Iterator[oidc_support.Provider]:
    yield from oidc_support.running()


@pytest.fixture(scope="module")
def server(provider: oidc_support.Provider) -> Iterator[LiveServer]:
    yield from oidc_support.serving(
        provider, "nodus-oidc-browser-", NODUS_OIDC_CLIENT_SECRET=oidc_support.CLIENT_SECRET
    )


def test_it_signs_in_with_the_provider_and_manages_members_through_a_group(
    browser: Browser, server: LiveServer, provider: oidc_support.Provider
) -> None:
    shell(
        server,
        "from runtimes.storage.models import Membership\n"
        "Membership.objects.create(project_id='demo', group='oidc:ml-admins', role='admin')\n",
    )
    provider.next_user = {"sub": "dana", "groups": ["ml-admins"]}
    context = browser.new_context()
    session = Session(context.new_page(), server)
    try:
        page = session.go("/login")
        page.click("#oidc-sign-in")
        page.wait_for_url(server.url + "/")
        page = session.go("/projects/demo/members")
        expect(page.locator("h1")).to_have_text("Members of demo")
        expect(page.locator("table")).to_contain_text("group:oidc:ml-admins")
        assert session.errors == []
    finally:
        context.close()
