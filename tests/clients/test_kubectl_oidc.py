"""Real kubectl with an OIDC kubeconfig (the provider's ID token as its `token`) against a live
server that trusts a real provider on a loopback port; every request ends in the audit log."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from tests.support import oidc as oidc_support
from tests.support.api import runtime_manifest
from tests.support.kubectl import Kubectl
from tests.support.liveserver import LiveServer
from tests.support.manage import shell
from tests.support.signin import member_id, signed_in, submit

pytestmark = pytest.mark.kubectl

GROUP = "oidc:ml-readers"
RUNTIMES = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


@pytest.fixture(scope="module")
def provider() -> Iterator[oidc_support.Provider]:
    yield from oidc_support.running()


@pytest.fixture(scope="module")
def server(provider: oidc_support.Provider) -> Iterator[LiveServer]:
    yield from oidc_support.serving(provider, "nodus-oidc-")


@pytest.fixture(scope="module")
def bound(server: LiveServer) -> LiveServer:
    """`demo` has the runtime `seen`, and the provider's group ml-readers views `demo`."""
    with server.client("alice") as alice:
        assert alice.post(RUNTIMES, json=runtime_manifest("seen")).status_code == 201
    shell(
        server,
        "from runtimes.storage.models import Membership\n"
        f"Membership.objects.create(project_id='demo', group={GROUP!r}, role='viewer')\n",
    )
    return server


def audit_events(server: LiveServer, username: str) -> list[dict[str, Any]]:
    path = server.data_dir / "audit" / "audit.log"
    lines = path.read_text().splitlines() if path.exists() else []
    events = [json.loads(line) for line in lines]
    return [e for e in events if e["user"]["username"] == username]


def kubectl_as(server: LiveServer, token: str, home: Path) -> Kubectl:
    return Kubectl(server.https_url, token, server.ca_pem, home)


def test_an_oidc_users_get_and_refused_delete_are_audited(
    bound: LiveServer, provider: oidc_support.Provider, tmp_path: Path
) -> None:
    kubectl = kubectl_as(bound, provider.id_token("dana", ["ml-readers"]), tmp_path)
    got = kubectl("get", "tr", "seen", "-o", "name")
    assert got.ok, str(got)
    assert got.stdout.strip() == "trainingruntime.nodus.dev/seen"
    refused = kubectl("delete", "tr", "seen")
    assert not refused.ok
    assert "Forbidden" in refused.stderr or "forbidden" in refused.stderr
    # The server's writer thread is off the request path: its lines follow the answers.
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while not any(e["verb"] == "delete" for e in events) and time.monotonic() < deadline:
        time.sleep(0.05)
        events = audit_events(bound, "oidc:dana")
    gets = [
        e for e in events if e["verb"] == "get" and e.get("objectRef", {}).get("name") == "seen"
    ]
    deletes = [e for e in events if e["verb"] == "delete"]
    assert gets
    assert gets[0]["responseStatus"]["code"] == 200
    assert gets[0]["user"]["groups"] == [GROUP, "system:authenticated"]
    assert deletes
    assert deletes[0]["responseStatus"]["code"] == 403
    assert deletes[0]["objectRef"]["name"] == "seen"
    assert deletes[0]["userAgent"].startswith("kubectl")
    assert deletes[0]["sourceIPs"] == ["127.0.0.1"]


def test_an_expired_token_is_refused(
    bound: LiveServer, provider: oidc_support.Provider, tmp_path: Path
) -> None:
    kubectl = kubectl_as(bound, provider.id_token("dana", ["ml-readers"], lifetime=-5), tmp_path)
    result = kubectl("get", "tr")
    assert not result.ok
    assert "Unauthorized" in result.stderr or "credentials" in result.stderr


def test_a_group_losing_its_binding_ends_its_watch(
    bound: LiveServer, provider: oidc_support.Provider, tmp_path: Path
) -> None:
    shell(
        bound,
        "from runtimes.storage.models import Membership\n"
        "Membership.objects.get_or_create(project_id='demo', group='oidc:watchers', "
        "defaults={'role': 'viewer'})\n",
    )
    token = provider.id_token("erin", ["watchers"])
    headers = {"Authorization": f"Bearer {token}"}
    with (
        httpx.Client(base_url=bound.url, headers=headers, timeout=30) as client,
        client.stream("GET", f"{RUNTIMES}?watch=1") as watch,
    ):
        assert watch.status_code == 200
        lines = watch.iter_lines()
        assert json.loads(next(lines))["type"] == "ADDED"
        # alice, the project's admin, removes the binding on the Members page (this process).
        console = signed_in(bound, "alice")
        page = console.get("/projects/demo/members").text
        member = member_id(page, re.escape("group:oidc:watchers"))
        removed = submit(console, "/projects/demo/members", {"action": "remove", "member": member})
        assert removed.status_code == 302
        ending = [json.loads(line) for line in lines if line.strip()]
    assert ending[-1]["type"] == "ERROR"
    assert ending[-1]["object"]["code"] == 403


def test_a_console_session_from_the_provider_keeps_its_groups_on_a_websocket(
    bound: LiveServer, provider: oidc_support.Provider
) -> None:
    shell(
        bound,
        "from runtimes.storage.models import Membership\n"
        "Membership.objects.get_or_create(project_id='demo', group='oidc:socket-readers', "
        "defaults={'role': 'viewer'})\n",
    )
    provider.next_user = {"sub": "fay", "groups": ["socket-readers"]}
    with httpx.Client(base_url=bound.url, timeout=30, follow_redirects=True) as browser:
        landed = browser.get("/accounts/oidc/login")
        assert landed.status_code == 200
        cookie = f"sessionid={browser.cookies['sessionid']}"
    url = (
        bound.url.replace("http://", "ws://")
        + f"{RUNTIMES}?watch=1&fieldSelector=metadata.name%3Dseen"
    )
    with ws_connect(url, origin=bound.url, additional_headers={"Cookie": cookie}) as ws:
        assert orjson.loads(ws.recv(timeout=10))["type"] == "ADDED"
        console = signed_in(bound, "alice")
        page = console.get("/projects/demo/members").text
        member = member_id(page, re.escape("group:oidc:socket-readers"))
        removed = submit(console, "/projects/demo/members", {"action": "remove", "member": member})
        assert removed.status_code == 302
        ending = orjson.loads(ws.recv(timeout=30))
        assert ending["type"] == "ERROR"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4403
    opened = [e for e in audit_events(bound, "oidc:fay") if e["verb"] == "watch"]
    assert opened
    assert opened[0]["user"]["groups"] == ["oidc:socket-readers", "system:authenticated"]
    assert opened[0]["objectRef"]["resource"] == "trainingruntimes"
