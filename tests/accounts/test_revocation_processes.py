"""Revocation made by another process reaches a server's open streams, without Redis.

The live server runs without Redis (the in-memory channel layer: no nudge crosses processes), on
SQLite as embedded and on PostgreSQL, and each change is made by a separate `manage.py` process
beside it, as an operator makes it: `revoketoken`, and `manage.py shell` removing a role binding
or deactivating a user. The stored
access epoch, which the server reads once a second, must end the streams within 5 seconds, long
before the 30 s backstop check could.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, closing

import orjson
import pytest

from tests.accounts.test_revocation import (
    DEADLINE_SECONDS,
    assert_ended_with,
    bearer,
    console_socket,
    http_end,
    ws_end,
    ws_watch,
)
from tests.support import liveserver, services
from tests.support.liveserver import LiveServer
from tests.support.manage import add_member, manage, shell
from tests.support.signin import signed_in
from tests.support.watch_live import DEMO, Watcher, manifest

MARK = pytest.mark.services


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=MARK)])
def server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """A live server without Redis: on its SQLite file, or on PostgreSQL."""
    if request.param == "sqlite":
        yield from liveserver.serve("nodus-revoke-cli-")
        return
    with services.temp_database("nodus_revoke_cli") as database_url:
        plain = liveserver.server_environment
        liveserver.server_environment = lambda data_dir: {
            **plain(data_dir),
            "DATABASE_URL": database_url,
        }
        try:
            yield from liveserver.serve("nodus-revoke-cli-")
        finally:
            liveserver.server_environment = plain


def test_revoketoken_in_another_process_ends_http_and_websocket_watches(
    server: LiveServer, tag: str, stack: ExitStack
) -> None:
    name = f"cli-{tag}"
    token = manage(server, "createtoken", "--user", "alice", "--name", name).strip()
    with bearer(server, token) as doomed:
        watch = f"{DEMO}?watch=1&labelSelector=t%3D{tag}"
        http = Watcher(doomed, watch)
        socket = stack.enter_context(ws_watch(server, watch, token))
        assert doomed.post(DEMO, json=manifest(f"cli-{tag}", {"t": tag})).status_code == 201
        assert http.next()["type"] == "ADDED"  # type: ignore[index]
        assert orjson.loads(socket.recv(timeout=10))["type"] == "ADDED"
        manage(server, "revoketoken", "--user", "alice", "--name", name)
        revoked_at = time.monotonic()  # the command has committed and exited
        events = http_end(http, DEADLINE_SECONDS + 2)
        frames, code = ws_end(socket, DEADLINE_SECONDS + 2)
        took = time.monotonic() - revoked_at
    assert_ended_with(events, 401, "Unauthorized")
    assert_ended_with(frames, 401, "Unauthorized", f"(close code {code})")
    assert code == 4401
    assert took < DEADLINE_SECONDS, took


def test_a_role_binding_removed_in_a_shell_ends_the_members_streams(
    server: LiveServer, tag: str, stack: ExitStack
) -> None:
    member = f"gina{tag}"
    token = add_member(server, member, "viewer")
    with bearer(server, token) as gina, bearer(server, server.tokens["alice"]) as alice:
        http = Watcher(gina, f"{DEMO}?watch=1&labelSelector=t%3D{tag}")
        session = stack.enter_context(closing(signed_in(server, member)))
        page = stack.enter_context(console_socket(server, session))
        assert alice.post(DEMO, json=manifest(f"seen-{tag}", {"t": tag})).status_code == 201
        assert http.next()["type"] == "ADDED"  # type: ignore[index]
        shell(
            server,
            "from runtimes.storage.models import Membership\n"
            f"Membership.objects.get(project_id='demo', user__username={member!r}).delete()\n",
        )
        removed_at = time.monotonic()
        events = http_end(http, DEADLINE_SECONDS + 2)
        _pushes, code = ws_end(page, DEADLINE_SECONDS + 2)
        took = time.monotonic() - removed_at
    assert_ended_with(events, 403, "Forbidden")
    assert code == 4403
    assert took < DEADLINE_SECONDS, took


def test_a_user_deactivated_in_a_shell_loses_every_stream(
    server: LiveServer, tag: str, stack: ExitStack
) -> None:
    member = f"hank{tag}"
    token = add_member(server, member, "editor")
    with bearer(server, token) as hank:
        socket = stack.enter_context(
            ws_watch(server, f"{DEMO}?watch=1&labelSelector=t%3D{tag}", token)
        )
        session = stack.enter_context(closing(signed_in(server, member)))
        page = stack.enter_context(console_socket(server, session))
        assert hank.post(DEMO, json=manifest(f"hanks-{tag}", {"t": tag})).status_code == 201
        assert orjson.loads(socket.recv(timeout=10))["type"] == "ADDED"
        shell(
            server,
            "from django.contrib.auth import get_user_model\n"
            f"user = get_user_model().objects.get(username={member!r})\n"
            "user.is_active = False\n"
            "user.save()\n",
        )
        deactivated_at = time.monotonic()
        frames, code = ws_end(socket, DEADLINE_SECONDS + 2)
        _pushes, console_code = ws_end(page, DEADLINE_SECONDS + 2)
        took = time.monotonic() - deactivated_at
    assert_ended_with(frames, 401, "Unauthorized", f"(close code {code})")
    assert (code, console_code) == (4401, 4401)
    assert took < DEADLINE_SECONDS, took
