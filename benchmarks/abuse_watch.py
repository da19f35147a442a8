"""Watch streams the abuse benchmark holds open: one HTTP or WebSocket watch, or a herd of them.

Each records when and how its stream ended (the server's final ERROR event, a clean end of the
chunked body, a WebSocket close code, a reset), so a row can say how long after a revocation or
a SIGTERM the server let go of it. Every read has a timeout; nothing here waits unbounded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import socket
import threading
import time
from dataclasses import dataclass, field

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from benchmarks.abuse_http import connect

READ_SECONDS = 1.0  # how often a blocked reader looks at its stop flag


def _error_event(line: bytes) -> str:
    """`ERROR 401 Unauthorized` from a watch event line, or "" if it is not an ERROR."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(event, dict) or event.get("type") != "ERROR":
        return ""
    status = event.get("object") or {}
    return f"ERROR {status.get('code', '')} {status.get('reason', '')}".strip()


@dataclass
class Ending:
    """How a stream ended; `at` is a perf_counter reading, None while it is still open."""

    at: float | None = None
    how: str = ""
    opened: str = ""  # the answer to the request that opened it ("200", "101", or why not)
    done: threading.Event = field(default_factory=threading.Event)

    def end(self, how: str) -> None:
        if self.at is None:
            self.at, self.how = time.perf_counter(), how
            self.done.set()


class HttpWatch:
    """`GET ...?watch=1` on its own socket, read by a thread until the server ends it."""

    def __init__(self, host: str, port: int, path: str, token: str) -> None:
        self.ending = Ending()
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(host, port, path, token), daemon=True
        )
        self.thread.start()

    def _run(self, host: str, port: int, path: str, token: str) -> None:
        try:
            conn = connect(host, port, tls=False, timeout=10)
        except OSError as error:
            self.ending.opened = f"connect: {error}"
            self.ready.set()
            return
        with conn:
            conn.sendall(
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: application/json\r\n\r\n".encode()
            )
            buffer = b""
            try:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        break
                    buffer += data
            except OSError as error:
                self.ending.opened = f"{type(error).__name__}"
                self.ready.set()
                return
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            status = head.split(b" ", 2)[1].decode() if head.count(b" ") >= 2 else "no status"
            self.ending.opened = status
            self.ready.set()
            if status != "200":
                self.ending.end(f"refused: {status}")
                return
            conn.settimeout(READ_SECONDS)
            self._follow(conn, buffer)

    def _follow(self, conn: socket.socket, buffer: bytes) -> None:
        body = b""  # the chunks' bytes not yet split into event lines
        while not self.stop.is_set():
            while True:  # take every whole chunk the buffer holds
                size_line, found, rest = buffer.partition(b"\r\n")
                if not found:
                    break
                try:
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                except ValueError:
                    self.ending.end("garbled chunk")
                    return
                if size == 0:  # the last chunk: an ERROR event may have come just before it
                    error = next(filter(None, map(_error_event, body.split(b"\n"))), "")
                    self.ending.end(f"{error}, then the stream ended" if error else "stream ended")
                    return
                if len(rest) < size + 2:
                    break
                body, buffer = body + rest[:size], rest[size + 2 :]
            *lines, body = body.split(b"\n")
            for line in lines:
                if error := _error_event(line):
                    self.ending.end(error)
                    return
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError as error:
                self.ending.end(f"reset ({type(error).__name__})")
                return
            if not data:
                self.ending.end("closed")
                return
            buffer += data

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=READ_SECONDS + 1)


class WebSocketWatch:
    """The same watch over WebSocket (bearer token in the Authorization header)."""

    def __init__(self, url: str, token: str) -> None:
        self.ending = Ending()
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(url, token), daemon=True)
        self.thread.start()

    def _run(self, url: str, token: str) -> None:
        try:
            stream = ws_connect(
                url,
                additional_headers={"Authorization": f"Bearer {token}"},
                open_timeout=10,
                close_timeout=2,
                ping_interval=None,
                proxy=None,
            )
        except Exception as error:  # a refused upgrade: whatever the library raises
            self.ending.opened = f"{type(error).__name__}: {error}"[:100]
            self.ready.set()
            return
        self.ending.opened = "101"
        self.ready.set()
        with stream:
            while not self.stop.is_set():
                try:
                    frame = stream.recv(timeout=READ_SECONDS)
                except TimeoutError:
                    continue
                except ConnectionClosed as closed:
                    code = closed.rcvd.code if closed.rcvd else "none"
                    self.ending.end(f"closed, code {code}")
                    return
                refusal = _error_event(frame if isinstance(frame, bytes) else frame.encode())
                if refusal:
                    # The close frame follows the ERROR event; say both.
                    with contextlib.suppress(TimeoutError, ConnectionClosed):
                        stream.recv(timeout=READ_SECONDS)
                    self.ending.end(f"{refusal}, code {stream.close_code}")
                    return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=READ_SECONDS + 3)


class WatchHerd:
    """`count` HTTP watches on one asyncio loop in a thread, the tokens taken in turn; counts how
    they opened and how they ended."""

    def __init__(self, host: str, port: int, path: str, tokens: list[str], count: int) -> None:
        self.host, self.port, self.path, self.count = host, port, path, count
        self.tokens = tokens
        self.opened: list[str] = []
        self.endings: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.tasks: list[concurrent.futures.Future[None]] = []

    def open(self, seconds: float) -> int:
        """Opens them, 50 at a time (daphne's listen backlog is small); how many got 200."""
        for start in range(0, self.count, 50):
            batch = [
                asyncio.run_coroutine_threadsafe(
                    self._one(self.tokens[i % len(self.tokens)]), self.loop
                )
                for i in range(start, min(start + 50, self.count))
            ]
            self.tasks += batch
            deadline = time.monotonic() + seconds
            while len(self.opened) < start + len(batch) and time.monotonic() < deadline:
                time.sleep(0.05)
        return self.opened.count("200")

    async def _one(self, token: str) -> None:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), 10
            )
        except (OSError, TimeoutError) as error:
            self.opened.append(f"connect: {type(error).__name__}")
            return
        opened = False
        try:
            writer.write(
                f"GET {self.path} HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Authorization: Bearer {token}\r\nAccept: application/json\r\n\r\n".encode()
            )
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            self.opened.append(head.split(b" ", 2)[1].decode())
            opened = True
            tail = b""
            while data := await reader.read(65536):
                tail = (tail + data)[-16:]
            self.endings.append("stream ended" if tail.endswith(b"0\r\n\r\n") else "closed")
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as error:
            if not opened:
                self.opened.append(type(error).__name__)
                return
            self.endings.append(f"reset ({type(error).__name__})")
        finally:
            writer.close()

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
