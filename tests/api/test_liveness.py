"""GET /livez answered on the listener's own thread; every other connection handed on intact."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from runtimes.api import liveness
from runtimes.api.liveness import Acceptor, Heartbeat, may_become_probe, probe_answer
from tests.support.liveserver import LiveServer

PROBE = b"GET /livez HTTP/1.1\r\nHost: x\r\nUser-Agent: kube-probe/1.35\r\nAccept: */*\r\n\r\n"


def test_a_whole_probe_is_answered_ok_and_the_connection_closed() -> None:
    answer = probe_answer(PROBE, alive=True, headers=b"X-Frame-Options: DENY\r\n")
    assert answer is not None
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"\r\nX-Frame-Options: DENY\r\n" in head
    assert b"\r\nContent-Type: text/plain; charset=utf-8" in head
    assert b"\r\nConnection: close" in head
    assert b"\r\nX-Request-Id: " in head
    assert body == b"ok"
    assert b"Content-Length: 2\r\n" in head


def test_a_head_probe_gets_the_head_only_and_a_stalled_loop_fails_the_check() -> None:
    head_only = probe_answer(b"HEAD /livez HTTP/1.0\r\n\r\n", alive=True)
    assert head_only is not None
    assert head_only.endswith(b"\r\n\r\n")
    failed = probe_answer(PROBE, alive=False)
    assert failed is not None
    assert failed.startswith(b"HTTP/1.1 500 ")
    assert failed.endswith(b"[-]event-loop failed: reason withheld\nlivez check failed\n")


@pytest.mark.parametrize(
    "data",
    [
        b"GET /livez?verbose HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /livez/ping HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /livez HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /livez HTTP/2.0\r\nHost: x\r\n\r\n",
        b"GET  /livez HTTP/1.1\r\n\r\n",
        PROBE + PROBE,  # pipelined: Twisted answers both in turn
        b"GET /livez HTTP/1.1\r\nContent-Length: 2\r\n\r\nab",
        b"GET /livez HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"GET /livez HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET /livez HTTP/1.1\r\nHost : x\r\n\r\n",
        b"GET /livez HTTP/1.1\r\nHost: x\r\n",  # not whole yet
        b"GET /livez HTTP/1.1\r\n" + b"X-F: v\r\n" * 17 + b"\r\n",  # Twisted counts fields
    ],
)
def test_anything_but_one_whole_probe_is_left_to_twisted(data: bytes) -> None:
    assert probe_answer(data, alive=True) is None


def test_it_waits_only_for_what_may_still_become_a_probe() -> None:
    assert may_become_probe(b"G")
    assert may_become_probe(b"GET /liv")
    assert may_become_probe(b"HEAD /livez HTTP/1.1\r\nHost: x")
    assert not may_become_probe(b"GET /apis")
    assert not may_become_probe(b"\x16\x03\x01")  # a TLS handshake
    assert not may_become_probe(PROBE)  # whole: answered or handed on, no more waiting


class Listener:
    """An `Acceptor` on a loopback port; what it hands on lands in `handed`."""

    def __init__(self, heartbeat: Heartbeat) -> None:
        listening = socket.create_server(("127.0.0.1", 0))
        self.handed: list[socket.socket] = []
        self.handed_one = threading.Event()
        self.acceptor = Acceptor(listening, self._take, heartbeat)
        self.acceptor.headers = b"X-Frame-Options: DENY\r\n"
        self.port = self.acceptor.port
        self.acceptor.start()

    def _take(self, connections: list[socket.socket]) -> None:
        self.handed.extend(connections)
        self.handed_one.set()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener(Heartbeat())
    yield made
    made.acceptor.stop()
    made.acceptor.thread.join(5)
    for connection in made.handed:
        connection.close()


def read_all(connection: socket.socket) -> bytes:
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    return data


def test_the_acceptor_answers_a_probe_sent_in_pieces(listener: Listener) -> None:
    with listener.connect() as client:
        client.sendall(PROBE[:7])
        time.sleep(0.05)
        client.sendall(PROBE[7:])
        answer = read_all(client)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"\r\n\r\nok")
    assert not listener.handed


def test_the_acceptor_hands_on_other_requests_with_their_bytes_unread(listener: Listener) -> None:
    request = b"GET /apis HTTP/1.1\r\nHost: x\r\n\r\n"
    with listener.connect() as client:
        client.sendall(request)
        assert listener.handed_one.wait(5)
        [handed] = listener.handed
        handed.settimeout(5)
        assert handed.recv(65536) == request
        handed.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")  # the socket is the client's own
        assert client.recv(65536).startswith(b"HTTP/1.1 204")


def test_a_connection_that_says_nothing_is_handed_on_after_a_moment(listener: Listener) -> None:
    with listener.connect():
        assert listener.handed_one.wait(liveness.HAND_OVER_SECONDS + 5)


def test_a_probe_fails_once_the_loop_has_not_ticked_for_its_bound() -> None:
    now = [1000.0]
    heartbeat = Heartbeat(clock=lambda: now[0])
    made = Listener(heartbeat)
    try:
        now[0] += liveness.LOOP_STALL_SECONDS + 1
        with made.connect() as client:
            client.sendall(PROBE)
            assert read_all(client).startswith(b"HTTP/1.1 500 ")
        heartbeat.beat()
        with made.connect() as client:
            client.sendall(PROBE)
            assert read_all(client).startswith(b"HTTP/1.1 200 ")
    finally:
        made.acceptor.stop()


def test_stopping_closes_the_listener(listener: Listener) -> None:
    listener.acceptor.stop()
    listener.acceptor.thread.join(5)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", listener.port), timeout=5)


def test_the_server_answers_a_probe_on_its_thread_and_the_rest_through_django(
    daphne_server: LiveServer,
) -> None:
    probe = httpx.get(f"{daphne_server.url}/livez")
    assert (probe.status_code, probe.text) == (200, "ok")
    assert probe.headers["Connection"] == "close"  # the thread's answer
    assert "Server" not in probe.headers  # daphne names itself on the answers it writes
    assert probe.headers["X-Frame-Options"] == "DENY"  # the application's policy, learned
    verbose = httpx.get(f"{daphne_server.url}/livez?verbose")
    assert verbose.status_code == 200
    assert verbose.text == "[+]ping ok\nlivez check passed\n"
    assert verbose.headers["Server"] == "daphne"  # the application's, through daphne
    tls = ssl.create_default_context(cadata=daphne_server.ca_pem.decode())
    over_tls = httpx.get(f"{daphne_server.https_url}/livez", verify=tls)  # Twisted's listener
    assert (over_tls.text, over_tls.headers["X-Frame-Options"]) == ("ok", "DENY")
