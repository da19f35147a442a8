"""The listeners' limits and deadlines, driven byte by byte on a fake clock.

The channel is Twisted's own HTTP/1.1 parser with our bounds; here it runs over an in-memory
transport and answers every request that gets through with 204, so each test sees exactly what
the listener writes and when it closes. tests/security/test_limits.py runs the same attacks
against a live server.
"""

from __future__ import annotations

import gc
import re
import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from twisted.internet import tcp
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.web import http

from runtimes.api import serving
from runtimes.api.listoptions import MAX_SELECTOR_BYTES
from runtimes.api.serving import (
    BODY_DEADLINE_SECONDS,
    HEADERS_DEADLINE_SECONDS,
    IDLE_TIMEOUT_SECONDS,
    LINGER_SECONDS,
    MAX_HEADER_BYTES,
    MAX_HEADER_FIELDS,
    MAX_LINE_BYTES,
    BoundedChannel,
    BoundedHTTPFactory,
    StatusRequest,
)
from runtimes.apimachinery.metadata_rules import TOTAL_ANNOTATION_SIZE_LIMIT, TOTAL_LABEL_SIZE_LIMIT


class _Answering(http.Request):
    """Answers 204 as soon as the whole request is in."""

    def process(self) -> None:
        self.setResponseCode(204)
        self.finish()


class Connection:
    def __init__(self, clock: Clock, max_body_bytes: int = 1024) -> None:
        self.clock = clock
        self.transport = StringTransport()
        self.channel = BoundedChannel()
        self.channel.callLater = clock.callLater  # type: ignore[method-assign]
        self.channel.timeOut = IDLE_TIMEOUT_SECONDS
        self.channel.requestFactory = _Answering
        self.channel.max_body_bytes = max_body_bytes
        self.channel.makeConnection(self.transport)

    def send(self, data: bytes) -> None:
        self.channel.dataReceived(data)

    def written(self) -> bytes:
        return self.transport.value()

    def status(self) -> tuple[int, dict[str, Any]]:
        """The one Status the listener answered with."""
        head, _, body = self.written().partition(b"\r\n\r\n")
        code = int(head.split(b" ", 2)[1])
        assert b"Content-Type: application/json" in head
        assert b"Connection: close" in head
        assert int(re.search(rb"Content-Length: (\d+)", head)[1]) == len(body)  # type: ignore[index]
        return code, orjson.loads(body)

    @property
    def closed(self) -> bool:
        return bool(self.transport.disconnecting)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def connection(clock: Clock) -> Connection:
    return Connection(clock)


def request(*headers: bytes, target: bytes = b"/livez") -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n" + b"".join(h + b"\r\n" for h in headers)


def test_it_answers_a_request_within_the_limits(connection: Connection) -> None:
    query = b"/apis?labelSelector=" + b"a" * (MAX_LINE_BYTES - 40)
    fields = [b"X-F%03d: " % i + b"v" * 300 for i in range(MAX_HEADER_FIELDS - 1)]
    connection.send(request(*fields, target=query) + b"\r\n")
    assert connection.written().startswith(b"HTTP/1.1 204 ")
    assert not connection.closed


def test_it_answers_414_to_a_request_line_over_16_kib(connection: Connection) -> None:
    # Twisted alone dropped such a connection without a word (its line limit).
    connection.send(b"GET /apis?labelSelector=" + b"a" * 128_000)
    code, status = connection.status()
    assert code == 414
    assert (status["kind"], status["reason"], status["code"]) == (
        "Status",
        "RequestURITooLong",
        414,
    )
    assert status["message"] == "the request line is longer than the server's limit of 16384 bytes"
    assert status["fix"]
    assert status["docs"] == "/docs/errors/RequestURITooLong"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            [b"X-Big: " + b"a" * MAX_LINE_BYTES],
            "a header field is longer than the server's limit of 16384 bytes",
        ),
        (
            [b"X-F%03d: " % i + b"v" * 1000 for i in range(40)],
            "the request's header fields are over the server's limit of 32768 bytes in 100 fields",
        ),
        (
            [b"X-F%03d: v" % i for i in range(MAX_HEADER_FIELDS)],
            "the request's header fields are over the server's limit of 32768 bytes in 100 fields",
        ),
    ],
    ids=["one field", "total bytes", "field count"],
)
def test_it_answers_431_to_headers_over_the_limits(
    connection: Connection, fields: list[bytes], message: str
) -> None:
    connection.send(request(*fields) + b"\r\n")  # Host makes the 101st field in the third case
    code, status = connection.status()
    assert (code, status["reason"], status["message"]) == (
        431,
        "RequestHeaderFieldsTooLarge",
        message,
    )


def test_it_answers_a_status_where_twisted_answered_a_bare_400(connection: Connection) -> None:
    connection.send(b"NONSENSE\r\n\r\n")
    code, status = connection.status()
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith("the request is not valid HTTP/1.1")


def test_it_refuses_a_declared_body_over_the_limit_before_reading_it(
    connection: Connection,
) -> None:
    connection.send(
        b"POST /apis HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1025\r\n\r\n"
    )
    assert b"100 Continue" not in connection.written()
    code, status = connection.status()
    assert (code, status["reason"]) == (413, "RequestEntityTooLarge")


def test_it_lingers_after_a_refusal_then_closes(connection: Connection, clock: Clock) -> None:
    connection.send(b"GET /" + b"a" * (MAX_LINE_BYTES + 10))
    answered = connection.written()
    assert not connection.closed  # still reading, so the client sees the Status, not a reset
    connection.send(b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert connection.written() == answered  # discarded
    clock.advance(LINGER_SECONDS)
    assert connection.closed


def test_it_cuts_off_headers_sent_a_byte_at_a_time(connection: Connection, clock: Clock) -> None:
    # Each byte resets Twisted's idle timer; the headers deadline runs from the first moment.
    sent = 0.0
    for byte in request(*[b"X-Slow: " + b"z" * 100] * 3):
        connection.send(bytes([byte]))
        clock.advance(0.5)
        sent += 0.5
        if connection.written():
            break
    assert sent == HEADERS_DEADLINE_SECONDS
    code, status = connection.status()
    assert (code, status["reason"]) == (408, "RequestTimeout")
    assert status["message"] == "the request line and headers did not arrive within 10 s"
    clock.advance(LINGER_SECONDS)
    assert connection.closed


def test_it_closes_a_silent_connection_quietly(connection: Connection, clock: Clock) -> None:
    clock.advance(HEADERS_DEADLINE_SECONDS - 0.1)
    assert not connection.closed
    clock.advance(0.1)
    assert connection.closed
    assert connection.written() == b""


def test_it_cuts_off_a_body_that_does_not_arrive(connection: Connection, clock: Clock) -> None:
    connection.send(b"POST /apis HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
    clock.advance(HEADERS_DEADLINE_SECONDS * 2)  # the headers deadline no longer applies
    assert connection.written() == b""
    clock.advance(BODY_DEADLINE_SECONDS - HEADERS_DEADLINE_SECONDS * 2)
    code, status = connection.status()
    assert (code, status["reason"]) == (408, "RequestTimeout")
    assert status["message"] == "the request body did not arrive within 60 s of its headers"


def test_it_keeps_a_connection_alive_for_90_idle_seconds(
    connection: Connection, clock: Clock
) -> None:
    connection.send(request() + b"\r\n")
    assert connection.written().startswith(b"HTTP/1.1 204 ")
    clock.advance(IDLE_TIMEOUT_SECONDS - 1)
    assert not connection.closed  # no headers deadline between requests
    clock.advance(1)
    assert connection.closed


def test_it_times_the_next_request_on_a_kept_alive_connection_from_its_first_byte(
    connection: Connection, clock: Clock
) -> None:
    connection.send(request() + b"\r\n")
    clock.advance(30)
    connection.send(b"GET /livez HTTP/1.1\r\n")
    clock.advance(HEADERS_DEADLINE_SECONDS - 1)
    connection.send(b"Host: x\r\n")
    assert connection.written().count(b"HTTP/1.1 ") == 1
    clock.advance(1)
    code = int(connection.written().split(b"\r\n\r\n")[1].split(b" ", 2)[1])
    assert code == 408


def test_it_answers_pipelined_requests_in_turn(connection: Connection) -> None:
    connection.send((request() + b"\r\n") * 3)
    assert connection.written().count(b"HTTP/1.1 204 ") == 3
    assert not connection.closed


def test_its_factory_builds_bounded_http_1_1_channels(settings: Any) -> None:
    settings.NODUS_MAX_BODY_BYTES = 12345
    factory = BoundedHTTPFactory(server=None)
    channel = factory.buildProtocol(None)
    assert isinstance(channel, BoundedChannel)
    assert channel.requestFactory is StatusRequest
    assert channel.max_body_bytes == 12345
    assert channel.timeOut == IDLE_TIMEOUT_SECONDS
    assert factory.acceptableProtocols() == [b"http/1.1"]


def test_its_server_listens_with_the_bounded_factory() -> None:
    server = serving.Server(application=None, endpoints=["tcp:0"])
    server.http_factory = object()  # what daphne's run() assigns
    assert isinstance(server.http_factory, BoundedHTTPFactory)


def test_the_limits_table_states_the_values_enforced() -> None:
    # The table stands as a comment above the values (a row: `# | limit | value | ...`).
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in Path(serving.__file__).read_text().splitlines()
        if line.startswith("# | ") and not line.startswith("# | Limit") and "---" not in line
    }
    kib = 1024
    assert rows == {
        "request line (method, path, query)": f"{MAX_LINE_BYTES // kib} KiB",
        "one header field": f"{MAX_LINE_BYTES // kib} KiB",
        "all header fields": f"{MAX_HEADER_BYTES // kib} KiB",
        "number of header fields": str(MAX_HEADER_FIELDS),
        "request body": "3 MiB",
        "request line and headers": f"{HEADERS_DEADLINE_SECONDS} s",
        "request body, after the headers": f"{BODY_DEADLINE_SECONDS} s",
        "idle kept-alive connection": f"{IDLE_TIMEOUT_SECONDS} s",
        "labelSelector, fieldSelector, shardSelector": f"{MAX_SELECTOR_BYTES // kib} KiB each",
        "metadata.annotations, in total": f"{TOTAL_ANNOTATION_SIZE_LIMIT // kib} KiB",
        "metadata.labels, in total": f"{TOTAL_LABEL_SIZE_LIMIT // kib} KiB",
    }
    from django.conf import settings

    assert 3 * kib * kib == settings.NODUS_MAX_BODY_BYTES


@pytest.mark.parametrize(
    ("given", "served"),
    [
        ("tcp:port=8000:interface=127.0.0.1", "tcp:port=8000:interface=127.0.0.1:backlog=1024"),
        ("ssl:8443:privateKey=k:certKey=c", "ssl:8443:privateKey=k:certKey=c:backlog=1024"),
        ("tcp:port=8000:backlog=16", "tcp:port=8000:backlog=16"),  # an operator's choice stays
        ("unix:/run/nodus.sock", "unix:/run/nodus.sock"),
    ],
)
def test_listeners_hold_a_deep_backlog_of_pending_connections(given: str, served: str) -> None:
    assert serving.with_backlog(given) == served


class _Streaming(http.Request):
    """Starts a chunked response (as a watch does) and leaves it open."""

    def process(self) -> None:
        self.setResponseCode(200)
        self.write(b"")


class _Listing(http.Request):
    """Answers 200 with a body and its length, as a list does."""

    def process(self) -> None:
        self.setResponseCode(200)
        self.setHeader(b"Content-Length", b"2")
        self.write(b"{}")
        self.finish()


class _CountingTransport(StringTransport):
    """Counts the writes handed to it: each one a send, or a turn of the loop's."""

    writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1
        super().write(data)

    def writeSequence(self, data: list[bytes]) -> None:
        self.writes += 1
        super().writeSequence(data)


def test_an_answers_head_goes_out_with_its_body_in_one_write(clock: Clock) -> None:
    conn = Connection(clock)
    conn.transport = _CountingTransport()
    conn.channel.requestFactory = _Listing
    conn.channel.makeConnection(conn.transport)
    conn.send(request() + b"\r\n")
    # Twisted wrote the status line and headers by themselves, and the body after them.
    assert conn.transport.writes == 1
    assert conn.written().startswith(b"HTTP/1.1 200 OK\r\n")
    assert conn.written().endswith(b"\r\n\r\n{}")


def test_a_streams_head_goes_out_on_the_loops_next_turn_before_any_event(clock: Clock) -> None:
    conn = Connection(clock)
    conn.channel.requestFactory = _Streaming
    conn.send(b"GET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
    assert conn.written() == b""  # held for body bytes that may come in the same turn
    clock.advance(0)
    assert conn.written().startswith(b"HTTP/1.1 200 OK\r\n")
    conn.channel.write(b"5\r\nevent\r\n")
    assert conn.written().endswith(b"\r\n\r\n5\r\nevent\r\n")


def _stream(clock: Clock) -> tuple[Connection, int]:
    """A connection with a watch-like chunked response open; how many bytes went out so far."""
    conn = Connection(clock)
    conn.channel.requestFactory = _Streaming
    conn.send(b"GET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
    clock.advance(0)  # the loop's next turn: the head of a response with no body yet goes out
    return conn, len(conn.written())


CHUNK = b"x" * (64 * 1024)


def test_a_stream_whose_client_reads_nothing_for_a_while_is_cut_off_once_it_owes_a_mebibyte(
    clock: Clock,
) -> None:
    conn, start = _stream(clock)
    conn.channel.write(CHUNK)  # the socket takes it
    conn.channel.pauseProducing()  # the transport's buffer is full: the client is not reading
    owed = serving.MAX_UNSENT_BYTES // len(CHUNK) + 1
    for _ in range(owed):
        conn.channel.write(CHUNK)
    assert not conn.closed  # past the mebibyte, but only just stalled: maybe a burst
    clock.advance(serving.STALLED_SECONDS - 1)
    assert not conn.closed
    clock.advance(1)  # stalled long enough, owing more than the mebibyte: cut at once
    assert conn.closed
    conn.channel.write(CHUNK)  # nothing more is written to a cut stream
    assert len(conn.written()) - start == len(CHUNK) * (1 + owed)


def test_a_stalled_stream_is_cut_when_it_comes_to_owe_a_mebibyte(clock: Clock) -> None:
    conn, _start = _stream(clock)
    conn.channel.pauseProducing()
    conn.channel.write(CHUNK)
    clock.advance(serving.STALLED_SECONDS)  # stalled, but owing little: kept
    assert not conn.closed
    for _ in range(serving.MAX_UNSENT_BYTES // len(CHUNK) - 1):
        conn.channel.writeSequence([CHUNK])
    assert not conn.closed  # exactly the mebibyte
    conn.channel.write(b"x")
    assert conn.closed


def test_a_client_that_reads_again_owes_nothing(clock: Clock) -> None:
    conn, _start = _stream(clock)
    conn.channel.pauseProducing()
    for _ in range(2 * serving.MAX_UNSENT_BYTES // len(CHUNK)):
        conn.channel.write(CHUNK)
    clock.advance(serving.STALLED_SECONDS - 1)
    conn.channel.resumeProducing()  # it read: the buffer drained
    clock.advance(serving.STALLED_SECONDS)
    assert not conn.closed
    conn.channel.pauseProducing()  # full again: the stall is counted from here
    for _ in range(2 * serving.MAX_UNSENT_BYTES // len(CHUNK)):
        conn.channel.write(CHUNK)
    clock.advance(serving.STALLED_SECONDS - 1)
    assert not conn.closed
    clock.advance(1)
    assert conn.closed


def test_a_burst_past_the_burst_bound_is_cut_at_once(clock: Clock) -> None:
    conn, _start = _stream(clock)
    conn.channel.pauseProducing()
    for _ in range(serving.BURST_UNSENT_BYTES // len(CHUNK)):
        conn.channel.write(CHUNK)
    assert not conn.closed  # at the bound
    conn.channel.write(b"x")
    assert conn.closed


def test_a_response_with_a_length_is_written_whole_however_slow_the_client(clock: Clock) -> None:
    conn = Connection(clock)
    conn.channel.pauseProducing()
    for _ in range(4 * serving.MAX_UNSENT_BYTES // 65536):
        conn.channel.write(b"x" * 65536)  # no stream in progress: a list's body, in chunks
    assert not conn.closed


class _RecordingForm(StatusRequest):
    """daphne's request as served, but answering 204 with what Twisted made of the body."""

    def process(self) -> None:
        self.channel.seen = (dict(self.args), self.content.read())  # type: ignore[union-attr]
        self.setResponseCode(204)
        self.finish()


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (b"application/x-www-form-urlencoded", b"a=1&b=2"),
        (
            b"multipart/form-data; boundary=X",
            b'--X\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--X--\r\n',
        ),
    ],
    ids=["urlencoded", "multipart"],
)
def test_a_posted_form_is_left_whole_to_the_application(
    clock: Clock, content_type: bytes, body: bytes
) -> None:
    # Twisted would parse the form into `args` (with the email package's parsers), which daphne
    # never reads: Django parses the body it is handed. Only the query's arguments are Twisted's.
    connection = Connection(clock)
    ignore = staticmethod(lambda request: None)
    server = type("Server", (), {"protocol_connected": ignore, "protocol_disconnected": ignore})()
    connection.channel.factory = BoundedHTTPFactory(server=server)
    connection.channel.requestFactory = _RecordingForm
    connection.send(
        b"POST /login?next=x HTTP/1.1\r\nHost: x\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body
    )
    assert connection.written().startswith(b"HTTP/1.1 204 ")
    assert connection.channel.seen == ({b"next": [b"x"]}, body)  # type: ignore[attr-defined]


class _Queueing(tcp.Server):
    """A plain TCP transport over one end of a socket pair, recording what Twisted would
    queue (for the loop's next turn) instead of queueing it."""

    def __init__(self, sock: socket.socket) -> None:  # Twisted's needs a reactor and a port
        self.socket = sock
        self.connected = 1
        self.disconnecting = 0
        self._tempDataBuffer: list[bytes] = []
        self.queued: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.queued.append(data)

    def writeSequence(self, iovec: Any) -> None:
        self.queued.append(b"".join(iovec))


@pytest.fixture
def pair() -> Any:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    yield ours, theirs
    ours.close()
    theirs.close()


def _channel_over(transport: Any) -> BoundedChannel:
    channel = BoundedChannel()
    channel.transport = transport
    return channel


def _read_all(sock: socket.socket) -> bytes:
    sock.setblocking(False)
    got = b""
    while True:
        try:
            piece = sock.recv(65536)
        except BlockingIOError:
            return got
        if not piece:
            return got
        got += piece


def test_a_write_with_nothing_queued_before_it_goes_to_the_socket_at_once(pair: Any) -> None:
    ours, theirs = pair
    transport = _Queueing(ours)
    _channel_over(transport).writeSequence([b"3\r\n", b"abc", b"\r\n"])
    _channel_over(transport).write(b"more")
    assert _read_all(theirs) == b"3\r\nabc\r\nmore"
    assert transport.queued == []


def test_what_the_socket_does_not_take_is_queued_in_order(pair: Any) -> None:
    ours, theirs = pair
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    transport = _Queueing(ours)
    channel = _channel_over(transport)
    payload = bytes(range(256)) * 4096  # 1 MiB: more than the socket's buffers hold
    channel.writeSequence([b"head:", payload])
    assert len(transport.queued) == 1
    taken = _read_all(theirs)
    assert 0 < len(taken) < len(payload)
    assert taken + transport.queued[0] == b"head:" + payload
    # Something is queued now: the next write goes behind it, never ahead.
    transport._tempDataBuffer = list(transport.queued)
    channel.write(b"next")
    assert transport.queued[-1] == b"next"
    assert _read_all(theirs) == b""


def test_what_is_left_after_a_partial_send_copies_only_the_part_it_stopped_in() -> None:
    head, body = b"HTTP/1.1 200 OK\r\n\r\n", b"x" * 100
    parts = [head, body]
    assert serving._unsent(parts, 0)[1] is body  # nothing went: nothing copied
    assert serving._unsent(parts, 5) == [head[5:], body]
    assert serving._unsent(parts, len(head))[0] is body  # at a boundary: the rest as it is
    assert serving._unsent(parts, len(head) + 30) == [body[30:]]
    assert serving._unsent(parts, len(head) + len(body)) == []


def test_a_tls_or_closing_connection_writes_through_twisted(pair: Any) -> None:
    ours, theirs = pair
    tls = _Queueing(ours)
    tls.TLS = True
    _channel_over(tls).write(b"secret")
    closing = _Queueing(ours)
    closing.disconnecting = 1
    _channel_over(closing).write(b"bye")
    assert (tls.queued, closing.queued) == ([b"secret"], [b"bye"])
    assert _read_all(theirs) == b""


def test_the_collector_is_settled_for_serving() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        serving.settle_collector()
        assert gc.get_threshold() == serving.COLLECTOR_THRESHOLDS
        assert gc.get_freeze_count() > frozen
        assert serving.COLLECTOR_THRESHOLDS[0] > before[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
