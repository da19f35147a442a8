"""The audit middleware: API requests, console writes and refusals become audit Events."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.support import audit
from tests.support.api import ApiClient, runtime_manifest

RUNTIMES = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


@pytest.fixture
def audit_log(settings: Any, tmp_path: Path) -> Path:
    return audit.fresh_log(settings, tmp_path)


def test_it_records_a_read_with_the_user_and_object(
    api: Callable[[str | None], ApiClient], audit_log: Path
) -> None:
    response = api("alice").get(RUNTIMES, **{"User-Agent": "kubectl/v1.35"})
    (event,) = audit.events(audit_log)
    assert event["apiVersion"] == "audit.k8s.io/v1"
    assert event["kind"] == "Event"
    assert event["level"] == "Metadata"
    assert event["stage"] == "ResponseComplete"
    assert event["verb"] == "list"
    assert event["user"] == {"username": "alice", "groups": ["system:authenticated"]}
    assert event["objectRef"] == {
        "resource": "trainingruntimes",
        "namespace": "demo",
        "apiGroup": "nodus.dev",
        "apiVersion": "v1beta1",
    }
    assert event["responseStatus"]["code"] == 200
    assert event["auditID"] == response["X-Request-Id"]
    assert event["userAgent"] == "kubectl/v1.35"
    assert event["sourceIPs"] == ["127.0.0.1"]
    assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]


def test_it_records_a_write_and_a_refused_delete(
    api: Callable[[str | None], ApiClient], audit_log: Path
) -> None:
    created = api("alice").post(RUNTIMES, runtime_manifest("audited"))
    assert created.status_code == 201
    refused = api("bob").delete(f"{RUNTIMES}/audited")
    assert refused.status_code == 403
    first, second = audit.events(audit_log)
    assert (first["verb"], first["user"]["username"], first["responseStatus"]["code"]) == (
        "create",
        "alice",
        201,
    )
    assert (second["verb"], second["user"]["username"], second["responseStatus"]["code"]) == (
        "delete",
        "bob",
        403,
    )
    assert second["objectRef"]["name"] == "audited"


def test_it_records_an_unknown_token_as_anonymous(audit_log: Path, actors: Any) -> None:
    assert ApiClient("nodus_made-up").get(RUNTIMES).status_code == 401
    (event,) = audit.events(audit_log)
    assert event["user"]["username"] == "system:anonymous"
    assert event["responseStatus"]["code"] == 401


def test_it_records_a_console_write(audit_log: Path, actors: Any) -> None:
    client = Client()
    client.force_login(actors["alice"])
    response = client.post("/account/tokens", {"name": "laptop"})
    assert response.status_code in {200, 302}
    events = [e for e in audit.events(audit_log) if e["verb"] == "post"]
    assert events
    assert events[-1]["user"]["username"] == "alice"
    assert events[-1]["annotations"]["nodus.dev/console-view"]


def test_it_records_a_refused_console_form(audit_log: Path, actors: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(actors["bob"])
    assert client.post("/account/tokens", {"name": "x"}).status_code == 403
    (event,) = audit.events(audit_log)
    assert (event["verb"], event["user"]["username"]) == ("post", "bob")
    assert event["responseStatus"]["code"] == 403


def test_it_leaves_health_checks_out(client: Client, audit_log: Path, db: Any) -> None:
    assert client.get("/livez").status_code == 200
    assert audit.events(audit_log) == []


def test_it_records_a_throttled_token_as_429(audit_log: Path, actors: Any) -> None:
    from runtimes.accounts import throttling

    limiter = throttling.limiter()
    limiter.reset()
    try:
        codes = [
            ApiClient("nodus_guess").get(RUNTIMES).status_code for _ in range(limiter.limit + 1)
        ]
    finally:
        limiter.reset()
    assert codes[-1] == 429
    events = audit.events(audit_log)
    assert [e["responseStatus"]["code"] for e in events] == codes


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_it_records_a_refused_websocket_watch(audit_log: Path) -> None:
    from channels.testing import WebsocketCommunicator

    from nodus_console.asgi import application

    headers = [(b"host", b"testserver"), (b"origin", b"http://testserver")]
    socket = WebsocketCommunicator(application, f"{RUNTIMES}?watch=1", headers=headers)
    connected, _ = await socket.connect()
    assert connected  # accepted to say why: an ERROR frame, then 4401
    assert (await socket.receive_json_from())["type"] == "ERROR"
    await socket.disconnect()
    (event,) = audit.events(audit_log)
    assert (event["verb"], event["responseStatus"]["code"]) == ("watch", 401)
    assert event["user"]["username"] == "system:anonymous"
