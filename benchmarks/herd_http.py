"""The herd's HTTP/1.1 client: one asyncio Protocol per connection, cheap enough for 1,000 streams.

The load generator shares two cores with the server it measures, so it parses only what it
needs: a response's status line, a few headers and its body (Content-Length or chunked); a
streaming response (a watch) is de-chunked as bytes arrive and handed on line by line with the
time its bytes came in, taken in `data_received` before any parsing. No HTTP library: one
would cost more CPU per event than the server's own send.

`Client` is one API client as client-go makes one: its own credentials, keep-alive
connections (a new one when all are busy), and 429 honoured by sleeping Retry-After and
trying again, counted in `Counters`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CONNECT_SECONDS = 30.0
Sink = Callable[[bytes, float], None]


class Closed(Exception):
    """The connection ended before the response (or the stream) did."""


@dataclass
class Response:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def retry_after(self) -> float:
        try:
            return max(0.0, float(self.headers.get(b"retry-after", b"1")))
        except ValueError:
            return 1.0


@dataclass
class Counters:
    """What the server made a client do besides its requests."""

    retries: int = 0  # 429s honoured
    errors: int = 0  # connections refused, reset or closed mid-response, then retried
    statuses: dict[int, int] = field(default_factory=dict)  # answers other than 2xx and 429

    def add(self, other: Counters) -> None:
        self.retries += other.retries
        self.errors += other.errors
        for status, n in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + n


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: a request at a time; a 200 to a streaming request stays open
    and feeds `sink` one line (without its newline) per call, with the bytes' arrival time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.closed = False
        self.waiter: asyncio.Future[Response] | None = None
        self.streaming = False  # the current request wants a 200 kept open as a stream
        self.sink: Sink | None = None
        self.ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.requests = 0  # sent on this connection
        self.answered = False  # any byte of the current request's answer arrived
        self._reset()

    def _reset(self) -> None:
        self.head: tuple[int, dict[bytes, bytes]] | None = None
        self.length = -1  # Content-Length, -1 chunked, -2 until the connection closes
        self.chunks: list[bytes] = []
        self.line = b""  # a stream's partial line

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.head is not None and self.length == -2 and self.waiter is not None:
            self._finish(b"".join(self.chunks))
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(Closed(str(exc or "connection closed")))
        if not self.ended.done():
            self.ended.set_result(f"closed: {exc}" if exc else "closed")

    def data_received(self, data: bytes) -> None:
        arrived = time.perf_counter()
        self.answered = True
        self.buffer += data
        try:
            consumed = self._parse(arrived)
        except (ValueError, IndexError) as error:
            self._fail(f"garbled response: {error}")
            return
        if consumed:
            del self.buffer[:consumed]

    def _fail(self, why: str) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(Closed(why))
        if not self.ended.done():
            self.ended.set_result(why)
        self.close()

    def _parse(self, arrived: float) -> int:
        buf, pos = self.buffer, 0
        if self.head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return 0
            lines = bytes(buf[:end]).split(b"\r\n")
            status = int(lines[0].split(b" ", 2)[1])
            headers: dict[bytes, bytes] = {}
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                headers[name.strip().lower()] = value.strip()
            self.head = (status, headers)
            if b"content-length" in headers:
                self.length = int(headers[b"content-length"])
            elif b"chunked" in headers.get(b"transfer-encoding", b"").lower():
                self.length = -1
            else:
                self.length = -2
            pos = end + 4
            if self.streaming and status == 200:
                self._respond(Response(status, headers, b""))
        if self.length >= 0:
            length = self.length
            if len(buf) - pos < length:
                return pos
            self._finish(bytes(buf[pos : pos + length]))  # resets self.length
            return pos + length
        if self.length == -2:
            self.chunks.append(bytes(buf[pos:]))
            return len(buf)
        while True:  # chunked
            if self.streaming and self.sink is None and self.head[0] == 200:
                return pos  # a stream's lines wait in the buffer until `follow`
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return pos
            size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
            if len(buf) - eol - 2 < size + 2:
                return pos
            payload = bytes(buf[eol + 2 : eol + 2 + size])
            pos = eol + 4 + size
            if size == 0:
                self._finish(b"".join(self.chunks))
                return pos
            if self.sink is not None:
                self._lines(payload, arrived)
            else:
                self.chunks.append(payload)

    def _lines(self, payload: bytes, arrived: float) -> None:
        assert self.sink is not None
        if self.line:
            payload, self.line = self.line + payload, b""
        *whole, self.line = payload.split(b"\n")
        for line in whole:
            if line:
                self.sink(line, arrived)

    def _respond(self, response: Response) -> None:
        """A streaming request's 200: the caller learns it now; lines go to the sink."""
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(response)

    def _finish(self, body: bytes) -> None:
        assert self.head is not None
        status, headers = self.head
        streamed = self.sink is not None
        self._reset()
        if streamed:
            if not self.ended.done():
                self.ended.set_result("stream ended")
            self.close()
            return
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(Response(status, headers, body))
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()

    def send(self, request: bytes, streaming: bool) -> asyncio.Future[Response]:
        if self.closed or self.transport is None:
            raise Closed("connection closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.streaming = streaming
        self.requests += 1
        self.answered = False
        self.transport.write(request)
        return self.waiter

    def follow(self, sink: Sink) -> None:
        """After a streaming request's 200: lines from here on (and any already buffered)."""
        self.sink = sink
        if self.buffer:
            self.data_received(b"")

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


async def connect(host: str, port: int) -> Connection:
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(CONNECT_SECONDS):
        _transport, protocol = await loop.create_connection(Connection, host, port)
    return protocol


class Client:
    """An API client with its own credentials: keep-alive connections, 429s honoured."""

    def __init__(self, host: str, port: int, token: str = "") -> None:
        self.host, self.port = host, port
        self.auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.idle: list[Connection] = []
        self.counters = Counters()

    def _request(self, method: str, path: str, body: bytes, content_type: str) -> bytes:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.auth}"
            "Accept: application/json\r\n"
        )
        if body or method in {"POST", "PUT", "PATCH"}:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        return head.encode() + b"\r\n" + body

    async def _connection(self) -> Connection:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                return conn
        return await connect(self.host, self.port)

    async def call(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        content_type: str = "application/json",
        deadline: float | None = None,
        idempotent: bool | None = None,
    ) -> Response:
        """The response, after as many 429s (and broken connections) as the deadline allows;
        a POST (unless `idempotent`) whose connection broke after it was sent answers status 0."""
        request = self._request(method, path, body, content_type)
        while True:
            response = await self._attempt(
                request,
                deadline,
                retry_sent=idempotent if idempotent is not None else method != "POST",
            )
            if response is not None:
                return response

    async def watch(
        self, method: str, path: str, sink: Sink, body: bytes = b"", deadline: float | None = None
    ) -> Connection:
        """Opens a stream (retrying 429s until `deadline`); returns its connection once the 200's
        headers are in. Each line then goes to `sink` with its arrival time."""
        request = self._request(method, path, body, "application/json")
        while True:
            conn = None
            try:
                conn = await self._connection()
                response = await self._exchange(conn, request, deadline, streaming=True)
            except (OSError, Closed):
                if conn is not None:
                    conn.close()
                self.counters.errors += 1
                await _pause(0.2, deadline)
                continue
            if response.status == 200:
                conn.follow(sink)
                return conn
            if not await self._refused(conn, response, deadline):
                raise Closed(f"watch answered {response.status}: {response.body[:300]!r}")

    async def _attempt(
        self, request: bytes, deadline: float | None, retry_sent: bool
    ) -> Response | None:
        """One try: the response, or None to try again (after a 429 or a broken connection).
        A request that may have reached the server is sent again only if `retry_sent` (not a
        create: it would come back 409), or if its connection was a kept-alive one that closed
        before any byte of the answer (the server let it go idle)."""
        conn = None
        try:
            conn = await self._connection()
            response = await self._exchange(conn, request, deadline, streaming=False)
        except (OSError, Closed) as error:  # TimeoutError is an OSError: past the deadline
            self.counters.errors += 1
            if conn is None:
                await _pause(0.2, deadline)
                return None
            conn.close()
            if isinstance(error, TimeoutError):
                raise
            if retry_sent or (conn.requests > 1 and not conn.answered):
                await _pause(0.2, deadline)
                return None
            self.counters.statuses[0] = self.counters.statuses.get(0, 0) + 1
            return Response(0, {}, str(error).encode())
        if response.status == 429:
            await self._refused(conn, response, deadline)
            return None
        if not conn.closed:
            self.idle.append(conn)
        if response.status >= 300:
            self.counters.statuses[response.status] = (
                self.counters.statuses.get(response.status, 0) + 1
            )
        return response

    async def _exchange(
        self, conn: Connection, request: bytes, deadline: float | None, streaming: bool
    ) -> Response:
        remaining = None if deadline is None else deadline - time.perf_counter()
        if remaining is not None and remaining <= 0:
            raise TimeoutError("deadline passed")
        async with asyncio.timeout(remaining):
            return await conn.send(request, streaming)

    async def _refused(self, conn: Connection, response: Response, deadline: float | None) -> bool:
        """A 429 (sleeps Retry-After; True) or another refusal (False)."""
        if not conn.closed:
            self.idle.append(conn)
        if response.status != 429:
            self.counters.statuses[response.status] = (
                self.counters.statuses.get(response.status, 0) + 1
            )
            return False
        self.counters.retries += 1
        await _pause(response.retry_after(), deadline)
        return True

    def close(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()


async def _pause(seconds: float, deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() + seconds >= deadline:
        raise TimeoutError("deadline passed")
    await asyncio.sleep(seconds)
