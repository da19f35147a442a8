"""Refusals of the console's forms are refusals, never 500s: anonymous, made-up session and
cross-site requests against every console URL, each told in one log line.

The URLs come from the console's URLconf, so a form added later is covered without a change
here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.urls import URLPattern

from runtimes.console.urls import urlpatterns
from tests.support import liveserver
from tests.support.availability import livez_stays_up, run_in_threads
from tests.support.liveserver import LiveServer
from tests.support.signin import signed_in

EVIL = "https://evil.example"
BOGUS_SESSION = "made-up-session-key-1234"
# A value for each URL parameter the console's paths take.
ARGUMENTS = {
    "project": "demo",
    "name": "nothing-here",
    "tab": "overview",
    "reason": "NotFound",
    "token_id": "1",
    "member_id": "1",
}


def console_paths() -> list[str]:
    paths = []
    for pattern in urlpatterns:
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        for parameter in re.findall(r"<(?:\w+:)?(\w+)>", route):
            assert parameter in ARGUMENTS, f"no test value for <{parameter}> in {route}"
        filled = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: ARGUMENTS[m[1]], route)
        paths.append("/" + filled)
    return paths


PATHS = console_paths()


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from liveserver.serve("nodus-refusals-")


@pytest.fixture(scope="module")
def alice(server: LiveServer) -> Iterator[httpx.Client]:
    client = signed_in(server, "alice")
    yield client
    client.close()


def told_once(server: LiveServer, response: httpx.Response) -> None:
    """The request's one log line (its access line) and no traceback for it."""
    request_id = response.headers["X-Request-Id"]
    lines = [line for line in server.log().splitlines() if request_id in line]
    assert len(lines) == 1, lines
    assert "Traceback" not in server.log()


def post(client: httpx.Client, path: str, **kwargs: Any) -> httpx.Response:
    return client.post(path, data={"name": "x"}, follow_redirects=False, **kwargs)


@pytest.mark.parametrize("path", PATHS)
def test_it_refuses_an_anonymous_cross_site_post_with_403(server: LiveServer, path: str) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = post(client, path, headers={"Origin": EVIL})
    assert answer.status_code == 403
    told_once(server, answer)


@pytest.mark.parametrize("path", PATHS)
def test_it_refuses_a_made_up_session_without_a_500(server: LiveServer, path: str) -> None:
    with httpx.Client(
        base_url=server.url, timeout=30, cookies={"sessionid": BOGUS_SESSION}
    ) as client:
        posted = post(client, path)
        read = client.get(path, follow_redirects=False)
    assert posted.status_code == 403
    told_once(server, posted)
    # An unknown session is no session: what an anonymous caller gets (a page, a redirect to
    # sign in, a 404, or 405 for a form that only takes POST).
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        assert read.status_code == anonymous.get(path, follow_redirects=False).status_code
    told_once(server, read)


@pytest.mark.parametrize("path", PATHS)
def test_it_refuses_a_signed_in_users_cross_site_post_with_403(
    server: LiveServer, alice: httpx.Client, path: str
) -> None:
    answer = post(alice, path, headers={"Origin": EVIL, "Referer": f"{EVIL}/"})
    still = alice.get("/account/tokens")
    assert answer.status_code == 403
    told_once(server, answer)
    assert still.status_code == 200  # nothing was done: not even signed out


def test_a_flood_of_refused_posts_leaves_the_server_answering(server: LiveServer) -> None:
    """What filled the log and the error monitoring before: every form, from eight clients."""
    codes: list[int] = []

    def attack(_index: int) -> None:
        with httpx.Client(
            base_url=server.url, timeout=30, cookies={"sessionid": BOGUS_SESSION}
        ) as client:
            codes.extend(post(client, path, headers={"Origin": EVIL}).status_code for path in PATHS)

    with livez_stays_up(server.url):
        run_in_threads(8, attack)
    assert codes == [403] * 8 * len(PATHS)
    assert "Traceback" not in server.log()
