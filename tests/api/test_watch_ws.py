"""Watch over WebSocket against a live daphne: the HTTP watch's events as text frames, bearer
credentials by header or kube's subprotocol, errors as an ERROR frame and a 4xxx close, and
the origin check."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.support.watch_live import DEMO, manifest


@pytest.fixture
def server(tight_server: Any) -> Any:
    return tight_server


@pytest.fixture
def alice(server: Any) -> Iterator[httpx.Client]:
    with server.client("alice") as client:
        yield client


def ws_url(server: Any, path: str) -> str:
    return server.url.replace("http://", "ws://") + path


def frames(ws: ClientConnection, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    return [orjson.loads(ws.recv(timeout=timeout)) for _ in range(count)]


def test_it_streams_watch_events_as_text_frames(server: Any, alice: httpx.Client) -> None:
    tag = uuid.uuid4().hex[:10]
    created = alice.post(DEMO, json=manifest(f"ws-{tag}", {"t": tag})).json()
    path = f"{DEMO}?watch=1&labelSelector=t%3D{tag}"
    with connect(
        ws_url(server, path),
        origin=server.url,
        additional_headers={"Authorization": f"Bearer {server.tokens['alice']}"},
    ) as ws:
        [first] = frames(ws, 1)
        assert first == {"type": "ADDED", "object": created}
        changed = alice.patch(
            f"{DEMO}/ws-{tag}",
            content=b'{"metadata":{"annotations":{"a":"b"}}}',
            headers={"Content-Type": "application/merge-patch+json"},
        ).json()
        [second] = frames(ws, 1)
        assert second == {"type": "MODIFIED", "object": changed}


def test_it_takes_the_token_from_the_kube_bearer_subprotocol(
    server: Any, alice: httpx.Client
) -> None:
    tag = uuid.uuid4().hex[:10]
    alice.post(DEMO, json=manifest(f"sp-{tag}", {"t": tag}))
    encoded = base64.urlsafe_b64encode(server.tokens["bob"].encode()).rstrip(b"=").decode()
    with connect(
        ws_url(server, f"{DEMO}?watch=true&labelSelector=t%3D{tag}"),
        origin=server.url,
        subprotocols=[f"base64url.bearer.authorization.k8s.io.{encoded}", "nodus.watch"],  # type: ignore[list-item]
    ) as ws:
        assert ws.subprotocol == "nodus.watch"  # never the one carrying the token
        [event] = frames(ws, 1)
        assert event["type"] == "ADDED"
        assert event["object"]["metadata"]["name"] == f"sp-{tag}"


@pytest.mark.parametrize(
    ("who", "query", "code", "reason"),
    [
        (None, "watch=1", 4401, "Unauthorized"),
        ("charlie", "watch=1", 4403, "Forbidden"),
        ("alice", "watch=1&resourceVersion=soon", 4400, "BadRequest"),
        ("alice", "watch=1&sendInitialEvents=true", 4422, "Invalid"),
    ],
)
def test_it_answers_a_bad_request_with_an_error_frame_and_close_code(
    server: Any, who: str | None, query: str, code: int, reason: str
) -> None:
    headers = {"Authorization": f"Bearer {server.tokens[who]}"} if who else {}
    with connect(
        ws_url(server, f"{DEMO}?{query}"), origin=server.url, additional_headers=headers
    ) as ws:
        [event] = frames(ws, 1)
        assert event["type"] == "ERROR"
        assert event["object"]["reason"] == reason
        assert event["object"]["code"] == code - 4000
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=5)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == code


def test_it_closes_normally_when_the_watch_times_out(server: Any) -> None:
    with (
        connect(
            ws_url(server, f"{DEMO}?watch=1&labelSelector=t%3Dnone&timeoutSeconds=1"),
            origin=server.url,
            additional_headers={"Authorization": f"Bearer {server.tokens['alice']}"},
        ) as ws,
        pytest.raises(ConnectionClosed) as closed,
    ):
        ws.recv(timeout=10)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1000


@pytest.mark.parametrize("origin", [None, "http://evil.example"])
def test_it_refuses_a_handshake_from_a_missing_or_foreign_origin(
    server: Any, origin: str | None
) -> None:
    with pytest.raises(InvalidStatus) as refused:
        connect(
            ws_url(server, f"{DEMO}?watch=1"),
            origin=origin,  # type: ignore[arg-type]
            additional_headers={"Authorization": f"Bearer {server.tokens['alice']}"},
        )
    assert refused.value.response.status_code == 403


def session_cookie(server: Any, who: str) -> str:
    """Signs in through the console's login form, as a browser would."""
    with httpx.Client(base_url=server.url, follow_redirects=False) as browser:
        page = browser.get("/login")
        token = page.text.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
        done = browser.post(
            "/login",
            data={"username": who, "password": f"{who}-pass", "csrfmiddlewaretoken": token},
            headers={"Origin": server.url, "Referer": f"{server.url}/login"},
        )
        assert done.status_code == 302, done.text
        return f"sessionid={browser.cookies['sessionid']}"


def test_it_accepts_a_session_only_from_its_own_origin(server: Any, alice: httpx.Client) -> None:
    tag = uuid.uuid4().hex[:10]
    alice.post(DEMO, json=manifest(f"se-{tag}", {"t": tag}))
    cookie = session_cookie(server, "bob")
    path = ws_url(server, f"{DEMO}?watch=1&labelSelector=t%3D{tag}")
    with connect(path, origin=server.url, additional_headers={"Cookie": cookie}) as ws:
        [event] = frames(ws, 1)
        assert event["object"]["metadata"]["name"] == f"se-{tag}"
    # localhost is an allowed host, but not the page that holds this session.
    other = server.url.replace("127.0.0.1", "localhost")
    with connect(path, origin=other, additional_headers={"Cookie": cookie}) as ws:
        [event] = frames(ws, 1)
        assert event["object"]["reason"] == "Unauthorized"
