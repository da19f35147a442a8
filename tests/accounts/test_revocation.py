"""Threat row: a token revoked, a role binding removed, a user deactivated, while its watches run.

Each revocation is made the way an admin makes it, in the live server: a user revokes a token on
the console's Tokens page, a project admin removes a member on the Members page, a platform admin
unticks "active" in Django admin. Within 5 seconds every open stream of that principal ends: an
HTTP watch with a final ERROR event carrying the 401 or 403 Status, a WebSocket watch with that
ERROR frame and close code 4401 or 4403, the console's socket with 4401 or 4403. /livez answers
throughout, and the writes acknowledged before stay.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing
from typing import Any

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.support import liveserver, services
from tests.support.availability import livez_stays_up
from tests.support.console import form_fields
from tests.support.liveserver import LiveServer
from tests.support.manage import add_member, manage, shell
from tests.support.signin import member_id, signed_in, submit
from tests.support.watch_live import DEMO, Watcher, manifest

# The promise: a revoked principal's streams end within this long.
DEADLINE_SECONDS = 5.0
EVERYWHERE = "/apis/nodus.dev/v1beta1/trainingruntimes"


def bearer(server: LiveServer, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def ws_url(server: LiveServer, path: str) -> str:
    return server.url.replace("http://", "ws://") + path


def ws_watch(server: LiveServer, path: str, token: str) -> Any:
    """A WebSocket watch with a bearer header (enter it: `stack.enter_context`)."""
    return connect(
        ws_url(server, path),
        origin=server.url,
        additional_headers={"Authorization": f"Bearer {token}"},
    )


def console_socket(server: LiveServer, session: httpx.Client) -> Any:
    cookie = f"sessionid={session.cookies['sessionid']}"
    # Open is enough: the socket is guarded whether or not its page has asked to watch yet.
    return connect(
        ws_url(server, "/ws/console"), origin=server.url, additional_headers={"Cookie": cookie}
    )


def ws_end(socket: ClientConnection, timeout: float) -> tuple[list[dict[str, Any]], int | None]:
    """Every frame until the server closes the socket, and its close code."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = socket.recv(timeout=max(0.1, deadline - time.monotonic()))
            if isinstance(message, str) and message.startswith("{"):
                frames.append(orjson.loads(message))
    except ConnectionClosed as closed:
        return frames, closed.rcvd.code if closed.rcvd else None
    except TimeoutError:
        pass
    return frames, None


def http_end(watcher: Watcher, timeout: float) -> list[dict[str, Any]]:
    """Every event until the server ends the watch (fails if it does not within `timeout`)."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        event = watcher.next(timeout=max(0.1, deadline - time.monotonic()))
        if event is None:
            return events
        events.append(event)


def assert_ended_with(events: list[dict[str, Any]], code: int, reason: str, how: str = "") -> None:
    """`how`: what else is known of the stream's end (a socket's close code), for the failure."""
    assert events, f"the stream ended without a final ERROR event {how}"
    last = events[-1]
    assert last["type"] == "ERROR", last
    assert last["object"]["kind"] == "Status"
    assert (last["object"]["code"], last["object"]["reason"]) == (code, reason)


def watching(answered: list[float], timeout: float = 10.0) -> None:
    """Waits for /livez's first answer, so the check runs all through the revocation."""
    deadline = time.monotonic() + timeout
    while not answered and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def root_admin(daphne_server: LiveServer) -> Iterator[httpx.Client]:
    client = signed_in(daphne_server, "root")
    yield client
    client.close()


def test_revoking_a_token_ends_its_http_and_websocket_watches(
    daphne_server: LiveServer, tag: str, stack: ExitStack
) -> None:
    server = daphne_server
    name = f"revoke-{tag}"
    token = manage(server, "createtoken", "--user", "alice", "--name", name).strip()
    with bearer(server, token) as doomed, bearer(server, server.tokens["alice"]) as alice:
        http = Watcher(doomed, f"{DEMO}?watch=1&labelSelector=t%3D{tag}")
        socket = stack.enter_context(
            ws_watch(server, f"{DEMO}?watch=1&labelSelector=t%3D{tag}", token)
        )
        created = doomed.post(DEMO, json=manifest(f"kept-{tag}", {"t": tag}))
        assert created.status_code == 201
        assert http.next()["type"] == "ADDED"  # type: ignore[index]
        assert orjson.loads(socket.recv(timeout=10))["type"] == "ADDED"
        console = signed_in(server, "alice")
        tokens_page = console.get("/account/tokens").text
        revoke = re.search(
            rf'<th scope="row">{name}</th>.*?href="(/account/tokens/\d+/revoke)"',
            tokens_page,
            re.S,
        )
        assert revoke, tokens_page
        with livez_stays_up(server.url) as answered:
            watching(answered)
            revoked_at = time.monotonic()
            assert submit(console, revoke[1], {}).status_code == 302
            events = http_end(http, DEADLINE_SECONDS + 2)
            http_took = time.monotonic() - revoked_at
            frames, code = ws_end(socket, DEADLINE_SECONDS + 2)
            ws_took = time.monotonic() - revoked_at
        assert_ended_with(events, 401, "Unauthorized")
        assert_ended_with(frames, 401, "Unauthorized", f"(close code {code})")
        assert code == 4401
        assert http_took < DEADLINE_SECONDS, http_took
        assert ws_took < DEADLINE_SECONDS, ws_took
        # The token is refused from now on; what it wrote before stays.
        assert doomed.get(DEMO).status_code == 401
        assert (
            alice.get(f"{DEMO}/kept-{tag}").json()["metadata"]["uid"]
            == (created.json()["metadata"]["uid"])
        )
        console.close()


def test_removing_a_role_binding_ends_the_members_streams_with_403(
    daphne_server: LiveServer, tag: str, stack: ExitStack
) -> None:
    server = daphne_server
    member = f"erin{tag}"
    token = add_member(server, member, "viewer")
    with bearer(server, token) as erin, bearer(server, server.tokens["alice"]) as alice:
        in_demo = Watcher(erin, f"{DEMO}?watch=1")
        everywhere = Watcher(erin, f"{EVERYWHERE}?watch=1&labelSelector=t%3D{tag}")
        socket = stack.enter_context(
            ws_watch(server, f"{DEMO}?watch=1&labelSelector=t%3D{tag}", token)
        )
        session = signed_in(server, member)
        page = stack.enter_context(console_socket(server, session))
        created = alice.post(DEMO, json=manifest(f"seen-{tag}", {"t": tag}))
        assert created.status_code == 201
        assert orjson.loads(socket.recv(timeout=10))["type"] == "ADDED"
        admin = signed_in(server, "alice")
        members_page = admin.get("/projects/demo/members").text
        binding = member_id(members_page, member)
        with livez_stays_up(server.url) as answered:
            watching(answered)
            removed_at = time.monotonic()
            removed = submit(
                admin, "/projects/demo/members", {"action": "remove", "member": binding}
            )
            assert removed.status_code == 302
            demo_events = http_end(in_demo, DEADLINE_SECONDS + 2)
            wide_events = http_end(everywhere, DEADLINE_SECONDS + 2)
            frames, code = ws_end(socket, DEADLINE_SECONDS + 2)
            _pushes, console_code = ws_end(page, DEADLINE_SECONDS + 2)
            took = time.monotonic() - removed_at
        assert_ended_with(demo_events, 403, "Forbidden")
        assert f'User "{member}" cannot watch' in demo_events[-1]["object"]["message"]
        assert_ended_with(wide_events, 403, "Forbidden")
        assert_ended_with(frames, 403, "Forbidden", f"(close code {code})")
        assert (code, console_code) == (4403, 4403)
        assert took < DEADLINE_SECONDS, took
        # Erin is still signed in and may still read the managed catalog; demo is refused.
        assert erin.get("/apis/nodus.dev/v1beta1/namespaces/nodus/trainingruntimes").is_success
        assert erin.get(DEMO).status_code == 403
        assert alice.get(f"{DEMO}/seen-{tag}").status_code == 200
        for client in (session, admin):
            client.close()


def test_deactivating_a_user_ends_every_stream_of_theirs_with_401(
    daphne_server: LiveServer, root_admin: httpx.Client, tag: str, stack: ExitStack
) -> None:
    server = daphne_server
    member = f"frank{tag}"
    token = add_member(server, member, "editor")
    user_id = shell(
        server,
        "from django.contrib.auth import get_user_model\n"
        f"print(get_user_model().objects.get(username={member!r}).pk)\n",
    ).strip()
    with bearer(server, token) as frank:
        created = frank.post(DEMO, json=manifest(f"franks-{tag}", {"t": tag}))
        assert created.status_code == 201
        http = Watcher(frank, f"{DEMO}?watch=1&labelSelector=t%3D{tag}")
        assert http.next()["type"] == "ADDED"  # type: ignore[index]
        socket = stack.enter_context(
            ws_watch(server, f"{DEMO}?watch=1&labelSelector=t%3D{tag}", token)
        )
        assert orjson.loads(socket.recv(timeout=10))["type"] == "ADDED"
        session = signed_in(server, member)
        page = stack.enter_context(console_socket(server, session))
        change = f"/admin/auth/user/{user_id}/change/"
        form = form_fields(
            root_admin.get(change).text, is_active=None, groups=None, user_permissions=None
        )
        form["_save"] = "Save"
        with livez_stays_up(server.url) as answered:
            watching(answered)
            deactivated_at = time.monotonic()
            saved = submit(root_admin, change, form)
            assert saved.status_code == 302, saved.text[:2000]
            events = http_end(http, DEADLINE_SECONDS + 2)
            frames, code = ws_end(socket, DEADLINE_SECONDS + 2)
            _pushes, console_code = ws_end(page, DEADLINE_SECONDS + 2)
            took = time.monotonic() - deactivated_at
        assert_ended_with(events, 401, "Unauthorized")
        assert_ended_with(frames, 401, "Unauthorized", f"(close code {code})")
        assert (code, console_code) == (4401, 4401)
        assert took < DEADLINE_SECONDS, took
        assert frank.get(DEMO).status_code == 401
        with bearer(server, server.tokens["root"]) as root:
            assert root.get(f"{DEMO}/franks-{tag}").status_code == 200
        session.close()


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LiveServer]]:
    """Two daphne workers on one PostgreSQL database and one Redis (the scale-out shape)."""
    services.require_redis()
    with services.temp_database("nodus_revoke") as database_url:
        extra = {
            "DATABASE_URL": database_url,
            "REDIS_URL": f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/6",
        }
        plain = liveserver.server_environment
        liveserver.server_environment = lambda data_dir: {**plain(data_dir), **extra}
        started: list[LiveServer] = []
        try:
            first = tmp_path_factory.mktemp("revoke-a")
            tokens = liveserver.prepare(first)
            started.append(liveserver.start(first, tokens))
            started.append(liveserver.start(tmp_path_factory.mktemp("revoke-b"), tokens))
            yield started
        finally:
            liveserver.server_environment = plain
            for server in started:
                liveserver.stop(server)


@pytest.mark.services
def test_a_revocation_on_one_worker_ends_the_watches_on_another(
    workers: list[LiveServer], tag: str, stack: ExitStack
) -> None:
    a, b = workers
    name = f"cross-{tag}"
    token = manage(a, "createtoken", "--user", "alice", "--name", name).strip()
    with bearer(b, token) as doomed:
        http = Watcher(doomed, f"{DEMO}?watch=1&labelSelector=t%3D{tag}")
        socket = stack.enter_context(ws_watch(b, f"{DEMO}?watch=1&labelSelector=t%3D{tag}", token))
        assert doomed.post(DEMO, json=manifest(f"cross-{tag}", {"t": tag})).status_code == 201
        assert http.next()["type"] == "ADDED"  # type: ignore[index]
        console = stack.enter_context(closing(signed_in(a, "alice")))
        revoke = re.search(
            rf'<th scope="row">{name}</th>.*?href="(/account/tokens/\d+/revoke)"',
            console.get("/account/tokens").text,
            re.S,
        )
        assert revoke
        with livez_stays_up(b.url) as answered:
            watching(answered)
            revoked_at = time.monotonic()
            # Revoked on worker A; the watches run on worker B, told over Redis.
            assert submit(console, revoke[1], {}).status_code == 302
            events = http_end(http, DEADLINE_SECONDS + 2)
            frames, code = ws_end(socket, DEADLINE_SECONDS + 2)
            took = time.monotonic() - revoked_at
        assert_ended_with(events, 401, "Unauthorized")
        assert_ended_with(frames, 401, "Unauthorized", f"(close code {code})")
        assert code == 4401
        # Well inside the promise, and well before the 30 s backstop could have done it.
        assert took < DEADLINE_SECONDS, took
