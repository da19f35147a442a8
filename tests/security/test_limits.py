"""Bounded requests, against a live server: metadata sizes, query and header sizes, slow clients.

The rows of the threat table this covers: 20,000 labels on one object (7.2 s for one write),
a label or field selector of 20-128 KB (the connection dropped, with no Status), slow-loris
headers (no limit on header time or size). Each attack runs beside a writer whose acknowledged
writes must all be readable afterwards, while /livez keeps answering.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import orjson
import pytest

from runtimes.api.listoptions import MAX_SELECTOR_BYTES
from runtimes.api.serving import (
    HEADERS_DEADLINE_SECONDS,
    LINGER_SECONDS,
    MAX_HEADER_FIELDS,
    MAX_LINE_BYTES,
)
from runtimes.apimachinery.metadata_rules import TOTAL_ANNOTATION_SIZE_LIMIT, TOTAL_LABEL_SIZE_LIMIT
from tests.support.api import GV, runtime_manifest
from tests.support.availability import livez_stays_up, run_in_threads
from tests.support.liveserver import LiveServer

RUNTIMES = f"{GV}/namespaces/demo/trainingruntimes"


@contextmanager
def writes_kept(server: LiveServer, prefix: str) -> Iterator[list[str]]:
    """Creates runtimes beside the block; afterwards every acknowledged one must be readable."""
    acknowledged: list[str] = []
    stop = threading.Event()

    def write() -> None:
        with server.client("alice") as alice:
            for index in range(10_000):  # at least one write, however short the attack
                name = f"{prefix}-{index}"
                if alice.post(RUNTIMES, json=runtime_manifest(name)).status_code == 201:
                    acknowledged.append(name)
                if stop.wait(0.2):
                    return

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield acknowledged
    finally:
        stop.set()
        writer.join(timeout=30)
    assert acknowledged, "no write was acknowledged during the attack"
    with server.client("alice") as alice:
        for name in acknowledged:
            response = alice.get(f"{RUNTIMES}/{name}")
            assert response.status_code == 200, (name, response.text)
            assert response.json()["metadata"]["labels"] == {"app": "trainer"}


@contextmanager
def under_attack(server: LiveServer, prefix: str) -> Iterator[None]:
    with livez_stays_up(server.url), writes_kept(server, prefix):
        yield


def assert_status(response: httpx.Response, code: int, reason: str) -> dict[str, Any]:
    assert response.status_code == code, response.text[:500]
    assert response.headers["Content-Type"].startswith("application/json")
    status: dict[str, Any] = response.json()
    assert (status["kind"], status["status"], status["reason"], status["code"]) == (
        "Status",
        "Failure",
        reason,
        code,
    )
    assert status["fix"]
    return status


def too_long_cause(status: dict[str, Any]) -> tuple[str, str, str]:
    [cause] = status["details"]["causes"]
    return cause["field"], cause["reason"], cause["message"]


def test_it_refuses_20000_labels_at_once_naming_metadata_labels(
    daphne_server: LiveServer,
) -> None:
    labels = {f"k{i}": f"v{i}" for i in range(20_000)}
    crowded = runtime_manifest("crowded")
    crowded["metadata"]["labels"] = labels
    with daphne_server.client("alice") as alice:
        assert alice.post(RUNTIMES, json=runtime_manifest("kept")).status_code == 201
        current = alice.get(f"{RUNTIMES}/kept").json()
        current["metadata"]["labels"] = labels
        writes = [
            ("POST", RUNTIMES, orjson.dumps(crowded), "application/json"),
            ("PUT", f"{RUNTIMES}/kept", orjson.dumps(current), "application/json"),
            (
                "PATCH",
                f"{RUNTIMES}/kept",
                orjson.dumps({"metadata": {"labels": labels}}),
                "application/merge-patch+json",
            ),
            (
                "PATCH",
                f"{RUNTIMES}/crowded?fieldManager=attacker",
                orjson.dumps(crowded),
                "application/apply-patch+yaml",
            ),
        ]
        with under_attack(daphne_server, "beside-labels"):
            for method, path, body, content_type in writes:
                response = alice.request(
                    method, path, content=body, headers={"Content-Type": content_type}
                )
                status = assert_status(response, 422, "Invalid")
                assert too_long_cause(status) == (
                    "metadata.labels",
                    "FieldValueTooLong",
                    f"Too long: may not be more than {TOTAL_LABEL_SIZE_LIMIT} bytes",
                )
        kept = alice.get(f"{RUNTIMES}/kept").json()
        assert kept["metadata"]["labels"] == {"app": "trainer"}
        assert alice.get(f"{RUNTIMES}/crowded").status_code == 404


def test_it_refuses_annotations_over_256_kib_naming_metadata_annotations(
    daphne_server: LiveServer,
) -> None:
    def annotated(name: str, size: int) -> dict[str, Any]:
        body = runtime_manifest(name)
        body["metadata"]["annotations"] = {"nodus.dev/note": "x" * (size - len("nodus.dev/note"))}
        return body

    with daphne_server.client("alice") as alice, under_attack(daphne_server, "beside-notes"):
        full = alice.post(RUNTIMES, json=annotated("full-notes", TOTAL_ANNOTATION_SIZE_LIMIT))
        assert full.status_code == 201, full.text[:500]
        response = alice.post(
            RUNTIMES, json=annotated("over-notes", TOTAL_ANNOTATION_SIZE_LIMIT + 1)
        )
        status = assert_status(response, 422, "Invalid")
        assert too_long_cause(status) == (
            "metadata.annotations",
            "FieldValueTooLong",
            "Too long: may not be more than 262144 bytes",
        )
        assert alice.get(f"{RUNTIMES}/over-notes").status_code == 404


def raw_get(url: str, target: str, token: str) -> tuple[int, dict[str, Any]]:
    """A GET through http.client, which sends any request line (httpx stops at 64 KB)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request("GET", target, headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        assert response.getheader("Content-Type", "").startswith("application/json")
        return response.status, orjson.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("size", [20_000, 64_000, 128_000])
def test_it_answers_a_selector_of_20_to_128_kb_with_a_414_status(
    daphne_server: LiveServer, size: int
) -> None:
    answers: list[tuple[int, dict[str, Any]]] = []

    def attack(index: int) -> None:
        parameter = "labelSelector" if index % 2 else "fieldSelector"
        selector = quote("app in (" + "a," * (size // 2) + "b)")
        target = f"{RUNTIMES}?{parameter}={selector}"
        answers.append(raw_get(daphne_server.url, target, daphne_server.tokens["bob"]))

    with under_attack(daphne_server, f"beside-selector-{size}"):
        run_in_threads(20, attack)
    assert len(answers) == 20
    for code, status in answers:
        assert (code, status["kind"], status["reason"]) == (414, "Status", "RequestURITooLong")
        assert status["message"] == (
            f"the request line is longer than the server's limit of {MAX_LINE_BYTES} bytes"
        )
        assert status["fix"]


def test_it_answers_a_selector_over_8_kib_with_a_400_naming_it(daphne_server: LiveServer) -> None:
    with daphne_server.client("bob") as bob, under_attack(daphne_server, "beside-8k"):
        for parameter in ("labelSelector", "fieldSelector"):
            response = bob.get(RUNTIMES, params={parameter: "a" * (MAX_SELECTOR_BYTES + 1)})
            status = assert_status(response, 400, "BadRequest")
            assert status["message"].startswith(f"{parameter}: Too long")


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Big": "a" * 20_000},
        {f"X-Many-{i}": "v" for i in range(MAX_HEADER_FIELDS + 1)},
        {f"X-Wide-{i}": "v" * 1000 for i in range(40)},
    ],
    ids=["one field of 20 KB", "101 fields", "40 KB in all"],
)
def test_it_answers_oversized_headers_with_a_431_status(
    daphne_server: LiveServer, headers: dict[str, str]
) -> None:
    answers: list[httpx.Response] = []

    def attack(_index: int) -> None:
        with httpx.Client(base_url=daphne_server.url, timeout=10) as anyone:
            answers.append(anyone.get("/livez", headers=headers))

    with under_attack(daphne_server, f"beside-headers-{len(headers)}"):
        run_in_threads(20, attack)
    assert len(answers) == 20
    for response in answers:
        assert_status(response, 431, "RequestHeaderFieldsTooLarge")


def test_it_refuses_bodies_over_3_mib_before_reading_them(daphne_server: LiveServer) -> None:
    with daphne_server.client("alice") as alice, under_attack(daphne_server, "beside-bodies"):
        declared = alice.post(
            RUNTIMES,
            content=b"{" + b" " * (3 * 1024 * 1024) + b"}",
            headers={"Content-Type": "application/json"},
        )
        assert_status(declared, 413, "RequestEntityTooLarge")

        def chunks() -> Iterator[bytes]:
            for _ in range(64):
                yield b" " * 65536

        chunked = alice.post(
            RUNTIMES, content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert_status(chunked, 413, "RequestEntityTooLarge")


@dataclass
class SlowLoris:
    answer: bytes = b""
    answered_after: float | None = None
    closed_after: float | None = None

    @property
    def code(self) -> int | None:
        return int(self.answer.split(b" ", 2)[1]) if self.answer.startswith(b"HTTP/1.1 ") else None


def slow_loris(url: str, tls: bool) -> SlowLoris:
    """Sends an endless request one byte every 0.5 s until the server ends the connection."""
    parts = urlsplit(url)
    started = time.monotonic()  # the server's deadline runs from the connection's first moment
    sock: socket.socket = socket.create_connection((parts.hostname, parts.port), timeout=5)
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    sock.setblocking(False)
    request = b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"z" * 10_000
    result = SlowLoris()
    sent = 0
    try:
        while time.monotonic() - started < 30:
            readable, _, _ = select.select([sock], [], [], 0.5)
            if readable:
                try:
                    chunk = sock.recv(4096)
                except (ssl.SSLWantReadError, BlockingIOError):
                    continue  # TLS records that carry no data (session tickets)
                if not chunk:
                    break
                result.answer += chunk
                result.answered_after = result.answered_after or time.monotonic() - started
                continue
            sock.send(request[sent : sent + 1])
            sent += 1
    except OSError:
        pass  # reset or broken pipe once the server has closed
    finally:
        result.closed_after = time.monotonic() - started
        sock.close()
    return result


def test_it_cuts_off_slow_loris_clients_at_the_headers_deadline(daphne_server: LiveServer) -> None:
    results: list[SlowLoris] = []

    def attack(index: int) -> None:
        url = daphne_server.https_url if index % 4 == 0 else daphne_server.url
        results.append(slow_loris(url, tls=url.startswith("https")))

    with under_attack(daphne_server, "beside-loris"):
        run_in_threads(24, attack)
    assert len(results) == 24
    for result in results:
        # A Status once the deadline passes, then the connection ends after the linger.
        assert result.code == 408, result
        assert b'"reason":"RequestTimeout"' in result.answer
        assert result.answered_after is not None
        assert HEADERS_DEADLINE_SECONDS - 0.5 < result.answered_after < HEADERS_DEADLINE_SECONDS + 2
        assert result.closed_after is not None
        assert result.closed_after < HEADERS_DEADLINE_SECONDS + LINGER_SECONDS + 2
