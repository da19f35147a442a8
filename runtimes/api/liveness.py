"""GET /livez answered off the event loop: the plain-HTTP listener accepts on a thread of its own.

A new connection whose first bytes are exactly one `GET /livez` (or `HEAD`) request is answered
on that thread (`Acceptor`): `ok`, or a failed `event-loop` check once the loop has not ticked
for `LOOP_STALL_SECONDS`, with the headers the application puts on its own /livez answer.
Every other connection goes to Twisted as it arrived, its bytes unread, as if Twisted had
accepted it. Anyone may ask, as `health_views.HEALTH` declares for /livez; the answer is in
neither the request log nor the metrics. The TLS listener stays Twisted's.
"""

# Why: every request's parsing, middleware and answer share one event loop, and under a herd of
# 1,000 informers, or creates fanned out to 1,000 watchers, a request waits for the loop's
# queue: /livez took 150-450 ms at p99, and seconds in the heaviest load (docs/benchmarks.md).
# A liveness probe with a 5 s timeout (deploy/base/api.yaml) would then restart a process that
# is only busy. kube-apiserver answers its health checks on goroutines of their own.
# Anything but that one request (`/livez?verbose`, `/livez/ping`, pipelined requests, a body,
# many header fields) is the application's, as before; so is a connection that has not sent a
# whole probe within `HAND_OVER_SECONDS`, and Twisted's own deadlines run from then.

from __future__ import annotations

import asyncio
import contextlib
import logging
import selectors
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

log = logging.getLogger("nodus.liveness")

LOOP_STALL_SECONDS = 30.0  # the loop's heartbeat older than this: /livez fails
BEAT_SECONDS = 1.0
HAND_OVER_SECONDS = 0.5  # a connection not yet a whole probe by then is Twisted's
RECHECK_SECONDS = 0.005  # how soon a connection that sent part of a probe is looked at again
PEEK_BYTES = 4096
ACCEPTS_PER_WAKE = 64
MAX_PENDING = 256  # connections being looked at; past it, new ones go to Twisted at once
MAX_RECHECKED = 16  # connections with part of a probe, polled; past it, handed on at once
ACCEPT_BACKOFF_SECONDS = 0.1  # after accept fails (out of descriptors): no busy loop
PROBES = (b"GET /livez ", b"HEAD /livez ")
# A probe sends a handful of fields (the kubelet: Host, User-Agent, Accept, Connection); with
# more, Twisted's listener judges the request against its limits (`serving`).
MAX_PROBE_FIELDS = 16
# Answer headers the thread writes itself, not the application's copy of them.
OWN_HEADERS = {b"content-type", b"content-length", b"x-request-id", b"connection", b"date"}


class Heartbeat:
    """When the event loop last ran a tick of ours."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.at = clock()

    def beat(self) -> None:
        self.at = self.clock()

    def alive(self) -> bool:
        return self.clock() - self.at <= LOOP_STALL_SECONDS

    def start(self, reactor: Any) -> None:
        """Beats every `BEAT_SECONDS` on `reactor`'s event loop."""
        from twisted.internet.task import LoopingCall

        call = LoopingCall(self.beat)
        call.clock = reactor
        call.start(BEAT_SECONDS, now=True)


def may_become_probe(data: bytes) -> bool:
    """Whether `data`, not yet a whole request, starts as a probe would."""
    head = data[: len(PROBES[1])]
    return b"\r\n\r\n" not in data and any(
        probe.startswith(head) or head.startswith(probe) for probe in PROBES
    )


def probe_answer(data: bytes, alive: bool, headers: bytes = b"") -> bytes | None:
    """The whole answer if `data` is exactly one GET or HEAD /livez request with no body,
    else None (the connection is Twisted's). `headers`: more header lines, each ending in
    CRLF (the application's policy headers, `learn_headers`)."""
    end = data.find(b"\r\n\r\n")
    if end < 0 or end + 4 != len(data):
        return None
    line, _, fields = data[:end].partition(b"\r\n")
    parts = line.split(b" ")
    if (
        len(parts) != 3
        or parts[0] not in (b"GET", b"HEAD")
        or parts[1] != b"/livez"
        or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0")
    ):
        return None
    lines = fields.split(b"\r\n") if fields else []
    if len(lines) > MAX_PROBE_FIELDS:
        return None
    for field in lines:
        name, colon, value = field.partition(b":")
        if not colon or name != name.strip():
            return None  # Twisted answers a malformed field
        if name.lower() == b"transfer-encoding" or (
            name.lower() == b"content-length" and value.strip() != b"0"
        ):
            return None
    if alive:
        status, body = b"200 OK", b"ok"
    else:
        status = b"500 Internal Server Error"
        body = b"[+]ping ok\n[-]event-loop failed: reason withheld\nlivez check failed\n"
    head = b"".join(
        (
            b"HTTP/1.1 ",
            status,
            b"\r\nContent-Type: text/plain; charset=utf-8\r\n",
            headers,
            b"X-Request-Id: ",
            uuid.uuid4().hex.encode(),
            b"\r\nContent-Length: ",
            str(len(body)).encode(),
            b"\r\nConnection: close\r\n\r\n",
        )
    )
    return head if parts[0] == b"HEAD" else head + body


async def learn_headers(application: Any) -> bytes:
    """The header lines the application puts on its own GET /livez answer (its security
    policy's), less those the thread writes itself: one call through the whole stack."""
    never: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    asked = False
    started: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if asked:
            return await never  # the client never leaves
        asked = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/livez",
        "raw_path": b"/livez",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    try:
        await application(scope, receive, send)
    finally:
        never.cancel()
    return b"".join(
        bytes(name) + b": " + bytes(value) + b"\r\n"
        for name, value in started[0]["headers"]
        if bytes(name).lower() not in OWN_HEADERS
    )


class Acceptor:
    """Accepts on `listening` (bound, listening) on a thread: answers probes, and hands every
    other connection to `hand_over(connections)`, a turn's at a time, for the event loop."""

    def __init__(
        self,
        listening: socket.socket,
        hand_over: Callable[[list[socket.socket]], None],
        heartbeat: Heartbeat,
    ) -> None:
        self.listening = listening
        self.hand_over = hand_over
        self.heartbeat = heartbeat
        self.selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._pending: dict[socket.socket, float] = {}  # connection: when it is handed over
        self._recheck: set[socket.socket] = set()  # sent part of a probe: looked at again soon
        self._watched: set[socket.socket] = set()  # in the selector: nothing sent yet
        self._giving: list[socket.socket] = []  # for Twisted, at the end of this turn
        self._stopping = False
        # The application's policy headers (`learn_headers`); until they are known, probes
        # go to Twisted like everything else.
        self.headers: bytes | None = None
        self.thread = threading.Thread(target=self._run, name="nodus-accept", daemon=True)

    @property
    def port(self) -> int:
        return int(self.listening.getsockname()[1])

    def start(self) -> None:
        self.listening.setblocking(False)
        self.selector.register(self.listening, selectors.EVENT_READ, None)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.thread.start()

    def stop(self) -> None:
        """Stops accepting (the listening socket closes); what it holds goes to Twisted."""
        if self._stopping:
            return
        self._stopping = True
        with contextlib.suppress(OSError):  # the thread has ended and closed it already
            self._wake_w.send(b"x")

    def _run(self) -> None:
        try:
            while not self._stopping:
                try:
                    self._turn()
                except Exception:  # a bug here must not close the port: log it, go on
                    log.exception("the liveness acceptor's turn failed")
                    time.sleep(ACCEPT_BACKOFF_SECONDS)
        finally:
            for connection in list(self._pending):
                self._give(connection)
            self._hand_on()
            self.selector.close()
            self.listening.close()
            self._wake_r.close()
            self._wake_w.close()

    def _turn(self) -> None:
        for key, _ in self.selector.select(self._timeout()):
            if key.fileobj is self.listening:
                self._accept()
            elif key.fileobj is self._wake_r:
                self._wake_r.recv(64)
            else:
                self._look(key.fileobj)  # type: ignore[arg-type]
        for connection in list(self._recheck):
            self._look(connection)
        now = time.monotonic()
        for connection, due in list(self._pending.items()):
            if now >= due:
                self._give(connection)
        self._hand_on()

    def _hand_on(self) -> None:
        if self._giving:
            giving, self._giving = self._giving, []
            self.hand_over(giving)

    def _timeout(self) -> float | None:
        if self._recheck:
            return RECHECK_SECONDS
        if not self._pending:
            return None
        return max(0.0, min(self._pending.values()) - time.monotonic())

    def _accept(self) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                connection, _address = self.listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors, say: Twisted's listener would wait too
                log.warning("accept failed", exc_info=True)
                time.sleep(ACCEPT_BACKOFF_SECONDS)
                return
            connection.setblocking(False)
            if len(self._pending) >= MAX_PENDING:
                self._give(connection)
                continue
            self._pending[connection] = time.monotonic() + HAND_OVER_SECONDS
            self._look(connection)  # a client's first bytes are often here already

    def _look(self, connection: socket.socket) -> None:
        try:
            data = connection.recv(PEEK_BYTES, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            self._watch(connection)
            return
        except OSError:
            self._drop(connection)
            return
        if not data:
            self._drop(connection)  # closed before a word
            return
        if len(data) < PEEK_BYTES and may_become_probe(data):
            # Its bytes stay readable (level-triggered): looked at again after a short wait,
            # a few connections at a time (a probe comes in one packet, nearly always).
            if connection in self._recheck:
                return
            if len(self._recheck) >= MAX_RECHECKED:
                self._give(connection)
                return
            self._unwatch(connection)
            self._recheck.add(connection)
            return
        headers = self.headers
        answer = None if headers is None else probe_answer(data, self.heartbeat.alive(), headers)
        if answer is None:
            self._give(connection)
            return
        self._forget(connection)
        try:
            connection.recv(len(data))
            connection.sendall(answer)  # a few hundred bytes: the socket's buffer takes them
        except OSError:
            pass  # the prober left
        finally:
            connection.close()

    def _watch(self, connection: socket.socket) -> None:
        if connection not in self._watched:
            self.selector.register(connection, selectors.EVENT_READ, None)
            self._watched.add(connection)

    def _unwatch(self, connection: socket.socket) -> None:
        if connection in self._watched:
            self.selector.unregister(connection)
            self._watched.discard(connection)

    def _forget(self, connection: socket.socket) -> None:
        self._pending.pop(connection, None)
        self._recheck.discard(connection)
        self._unwatch(connection)

    def _give(self, connection: socket.socket) -> None:
        """To Twisted, with the others of this turn (one hand-over to the loop)."""
        self._forget(connection)
        self._giving.append(connection)

    def _drop(self, connection: socket.socket) -> None:
        self._forget(connection)
        connection.close()
