"""Threat row: password guessing on the console's and the admin's sign-in; token guessing.

Sign-ins lock out (django-axes) after 5 failures for one username from one address: the sixth
attempt, even with the right password, gets 429 and the lockout page with Retry-After, while
other users from the same address, and the API, carry on. Bearer tokens that fail are counted
per client address: past 20 within a minute, every token from that address (over HTTP, the HTTP
watch and the WebSocket) gets 429 TooManyRequests with Retry-After, as a Status, before any
lookup, while other addresses are served. The guessing clients here connect from other loopback
addresses (127.0.0.2, ...), so the limit they reach is theirs alone.
"""

from __future__ import annotations

import base64
import re
import socket
import uuid

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support.availability import livez_stays_up
from tests.support.liveserver import LiveServer
from tests.support.manage import manage
from tests.support.watch_live import DEMO, manifest

LOGIN_FAILURES = 5  # AXES_FAILURE_LIMIT
TOKEN_FAILURES = 20  # NODUS_TOKEN_FAILURE_LIMIT


def form_client(server: LiveServer, path: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=server.url, timeout=30)
    page = client.get(path)
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert match, page.text
    return client, match[1]


def sign_in(client: httpx.Client, path: str, csrf: str, who: str, password: str) -> httpx.Response:
    data = {"username": who, "password": password, "csrfmiddlewaretoken": csrf}
    return client.post(path, data=data, headers={"Referer": str(client.base_url) + path})


def from_address(server: LiveServer, address: str, token: str) -> httpx.Client:
    """A client whose connections leave from `address` (any 127.x.y.z reaches the server)."""
    return httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {token}"},
        transport=httpx.HTTPTransport(local_address=address),
        timeout=30,
    )


@pytest.mark.parametrize("path", ["/login", "/admin/login/"])
def test_sign_in_locks_out_one_user_from_one_address_after_five_failures(
    daphne_server: LiveServer, path: str
) -> None:
    victim = f"gina{uuid.uuid4().hex[:6]}"
    manage(daphne_server, "createuser", victim, "--password", "right-pass", "--staff")
    client, csrf = form_client(daphne_server, path)
    with livez_stays_up(daphne_server.url):
        for _ in range(LOGIN_FAILURES - 1):
            failed = sign_in(client, path, csrf, victim, "wrong-pass")
            assert failed.status_code == 200  # the form again, with its error
        # The fifth failure is the one that locks.
        assert sign_in(client, path, csrf, victim, "wrong-pass").status_code == 429
        locked = sign_in(client, path, csrf, victim, "right-pass")
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.text
    assert victim in locked.text
    assert "locked for 15 minutes" in locked.text
    assert int(locked.headers["Retry-After"]) == 15 * 60
    assert "sessionid" not in client.cookies
    # Someone else, from the same address, signs in as usual.
    other, other_csrf = form_client(daphne_server, path)
    assert sign_in(other, path, other_csrf, "root", "root-pass").status_code == 302
    # And the API does not care: tokens are limited on their own terms.
    with daphne_server.client("alice") as alice:
        assert alice.get(DEMO).status_code == 200
    for made in (client, other):
        made.close()


def test_failed_bearer_tokens_are_rate_limited_per_address_with_429(
    daphne_server: LiveServer,
) -> None:
    with daphne_server.client("alice") as alice:
        kept = alice.post(DEMO, json=manifest(f"kept-{uuid.uuid4().hex[:6]}"))
        assert kept.status_code == 201
        guesser = from_address(daphne_server, "127.0.0.2", "nodus_guess")
        with livez_stays_up(daphne_server.url):
            replies = [guesser.get(DEMO) for _ in range(TOKEN_FAILURES)]
            answers = [reply.status_code for reply in replies]
            refused = guesser.get(DEMO)
            # While the address is over the limit even a valid token from it waits.
            valid_but_refused = from_address(
                daphne_server, "127.0.0.2", daphne_server.tokens["bob"]
            )
            held = valid_but_refused.get(DEMO)
            watch = guesser.get(f"{DEMO}?watch=1")
            # Another address is served as usual.
            served = alice.get(DEMO)
        assert answers == [401] * TOKEN_FAILURES, [
            r.text[:300] for r in replies if r.status_code != 401
        ]
        for response in (refused, held, watch):
            assert response.status_code == 429, response.text
            body = response.json()
            assert (body["kind"], body["reason"], body["code"]) == (
                "Status",
                "TooManyRequests",
                429,
            )
            assert 1 <= int(response.headers["Retry-After"]) <= 60
            assert body["details"]["retryAfterSeconds"] == int(response.headers["Retry-After"])
            assert body["docs"].endswith("/docs/errors/TooManyRequests")
        assert served.status_code == 200
        # Nothing acknowledged was lost.
        name = kept.json()["metadata"]["name"]
        assert (
            alice.get(f"{DEMO}/{name}").json()["metadata"]["uid"] == kept.json()["metadata"]["uid"]
        )
        for made in (guesser, valid_but_refused):
            made.close()


def ws_from(server: LiveServer, address: str, token: str) -> tuple[list[dict[str, object]], int]:
    """Opens a WebSocket watch from `address` with `token` in kube's subprotocol; returns the
    frames and the close code."""
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), source_address=(address, 0))
    encoded = base64.urlsafe_b64encode(token.encode()).rstrip(b"=").decode()
    frames: list[dict[str, object]] = []
    url = server.url.replace("http://", "ws://") + f"{DEMO}?watch=1"
    with connect(
        url,
        sock=sock,
        origin=server.url,
        subprotocols=[f"base64url.bearer.authorization.k8s.io.{encoded}", "nodus.watch"],  # type: ignore[list-item]
    ) as ws:
        try:
            while True:
                frames.append(orjson.loads(ws.recv(timeout=10)))
        except ConnectionClosed as closed:
            return frames, closed.rcvd.code if closed.rcvd is not None else -1
    raise AssertionError("the server kept the socket open")


def test_failed_websocket_tokens_count_too_and_close_with_4429(daphne_server: LiveServer) -> None:
    with livez_stays_up(daphne_server.url):
        codes = [
            ws_from(daphne_server, "127.0.0.3", "nodus_guess")[1] for _ in range(TOKEN_FAILURES)
        ]
        frames, code = ws_from(daphne_server, "127.0.0.3", "nodus_guess")
    assert codes == [4401] * TOKEN_FAILURES
    assert code == 4429
    [error] = frames
    assert error["type"] == "ERROR"
    status = error["object"]
    assert isinstance(status, dict)
    assert (status["reason"], status["code"]) == ("TooManyRequests", 429)
    # Another address is not held back.
    with daphne_server.client("alice") as alice:
        assert alice.get(DEMO).status_code == 200
