"""HEAD against a live daphne: the headers GET would send, no body, and the connection stays
usable; a HEAD on a list larger than Django's 64 KiB response chunks once wrote the rest of
the list after its headers, which the next request on the connection read as its answer."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest

from tests.support import liveserver
from tests.support.liveserver import LiveServer
from tests.support.watch_live import DEMO, manifest


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from liveserver.serve("nodus-head-")


def test_a_head_on_a_large_list_sends_no_body_and_keeps_the_connection(
    server: LiveServer,
) -> None:
    token = server.tokens["alice"]
    with server.client("alice") as alice:
        for i in range(160):
            made = alice.post(DEMO, json=manifest(f"head-{i:03d}", description="x" * 600))
            assert made.status_code == 201, made.text
        listed = alice.get(DEMO)
    assert len(listed.content) > 2 * 65536
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        for path in (DEMO, f"{DEMO}/head-000", DEMO):
            connection.request("HEAD", path, headers=headers)
            head = connection.getresponse()
            assert head.status == 200
            assert head.read() == b""
            assert head.getheader("Content-Type") == "application/json"
        assert int(head.getheader("Content-Length") or 0) == len(listed.content)
        # The same connection: a body left behind by a HEAD would be read as this answer.
        connection.request("GET", "/version")
        version = connection.getresponse()
        assert version.status == 200
        assert b'"gitVersion"' in version.read()
    finally:
        connection.close()
