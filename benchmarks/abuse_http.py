"""The abuse benchmark's clients: what came back as short text, a console session, raw sockets.

Every request is bounded by a timeout; whatever happens instead of an answer (a reset, a
dropped connection, a client-side timeout) is returned as text, never raised, so a row reports
today's behaviour as faithfully as the fixed one.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import time
from typing import Any

import httpx

from benchmarks.abuse_probe import Answer, AtLeast


def answer(response: httpx.Response) -> str:
    """`422 Invalid`: the code, and the Status reason when the body is a Status."""
    reason = ""
    if "json" in response.headers.get("content-type", ""):
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("kind") == "Status":
            reason = str(body.get("reason") or "")
    return f"{response.status_code} {reason}".strip()


def failure(error: Exception) -> str:
    """What a client saw instead of an answer."""
    if isinstance(error, httpx.TimeoutException):
        return "no answer (client timeout)"
    if isinstance(error, httpx.RemoteProtocolError):
        return "connection dropped, no Status"
    if isinstance(error, httpx.ReadError | httpx.WriteError):
        return "connection reset, no Status"
    if isinstance(error, httpx.ConnectError):
        return "connection refused"
    return f"{type(error).__name__}: {error}"[:100]


def send(client: httpx.Client, method: str, url: str, **kwargs: Any) -> str:
    try:
        return answer(client.request(method, url, **kwargs))
    except httpx.HTTPError as error:
        return failure(error)


class ConsoleSession:
    """A signed-in browser, as far as the console can tell: session cookie and CSRF token."""

    def __init__(self, url: str, timeout: float) -> None:
        self.client = httpx.Client(base_url=url, timeout=timeout, follow_redirects=False)

    def csrf(self, page: str = "/login") -> str:
        text = self.client.get(page).text
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text)
        return found.group(1) if found else self.client.cookies.get("csrftoken") or ""

    def login(self, username: str, password: str, path: str = "/login") -> httpx.Response:
        token = self.csrf(path)
        return self.client.post(
            path,
            data={"username": username, "password": password, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{self.client.base_url}{path}"},
        )

    def post(self, path: str, data: dict[str, str]) -> httpx.Response:
        token = self.client.cookies.get("csrftoken") or ""
        headers = {"X-CSRFToken": token, "HX-Request": "true", "Referer": str(self.client.base_url)}
        return self.client.post(path, data=data, headers=headers)

    def close(self) -> None:
        self.client.close()


def raw_get(host: str, port: int, target: str, headers: dict[str, str], timeout: float) -> str:
    """A GET written on the socket as given (httpx refuses query strings over 64 KB): the
    status and Status reason, or how the connection ended without one."""
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    received = b""
    deadline = time.monotonic() + timeout
    try:
        with connect(host, port, tls=False, timeout=timeout) as conn:
            conn.sendall(request)
            while time.monotonic() < deadline and (data := conn.recv(65536)):
                received += data
    except TimeoutError:
        return "no answer (client timeout)" if not received else _parsed(received)
    except OSError as error:
        if not received:
            return f"connection reset, no Status ({type(error).__name__})"
    if not received:
        return "connection dropped, no Status"
    return _parsed(received)


def _parsed(received: bytes) -> str:
    head, _, body = received.partition(b"\r\n\r\n")
    parts = head.split(b"\r\n", 1)[0].split(b" ", 2)
    status = parts[1].decode(errors="replace") if len(parts) > 1 else "no status line"
    reason = re.search(rb'"kind":\s*"Status".*?"reason":\s*"(\w+)"', body, re.DOTALL)
    return f"{status} {reason.group(1).decode()}" if reason else status


def connect(host: str, port: int, tls: bool, timeout: float) -> socket.socket:
    """A plain or TLS socket to a loopback listener (the self-signed certificate not checked)."""
    raw = socket.create_connection((host, port), timeout=timeout)
    if not tls:
        return raw
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context.wrap_socket(raw, server_hostname=host)


def dribble_headers(host: str, port: int, tls: bool, every: float, bound: float) -> Answer:
    """Slow-loris: a request's header sent one byte every `every` seconds, never finished.

    Returns how the server ended it (or that it did not) and the seconds that took.
    """
    started = time.perf_counter()
    try:
        conn = connect(host, port, tls, timeout=5)
    except OSError as error:
        return f"could not connect: {error}", time.perf_counter() - started
    head = f"GET /livez HTTP/1.1\r\nHost: {host}\r\nX-Slow: " + "a" * 100_000
    conn.settimeout(every)
    try:
        for byte in head:
            if time.perf_counter() - started > bound:
                return AtLeast(f"not cut off after {bound:.0f} s", time.perf_counter() - started)
            conn.sendall(byte.encode())
            try:
                data = conn.recv(4096)
            except (TimeoutError, ssl.SSLWantReadError):
                continue
            seconds = time.perf_counter() - started
            if not data:
                return "cut off (connection closed)", seconds
            status = data.split(b"\r\n", 1)[0].decode(errors="replace")
            return f"cut off: {status}", seconds
    except OSError as error:
        return f"cut off ({type(error).__name__})", time.perf_counter() - started
    finally:
        conn.close()
    return AtLeast("sent 100 KB of header, not cut off", time.perf_counter() - started)


async def get_status(host: str, port: int, path: str, token: str, timeout: float) -> str:
    """One GET on its own connection, read to the end; its status code, or what went wrong."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError) as error:
        return f"connect: {type(error).__name__}"
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Accept: application/json\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), timeout)
        await asyncio.wait_for(_drain(reader), timeout)
        parts = status.split(b" ", 2)
        return parts[1].decode() if len(parts) > 1 else "connection closed, no status"
    except TimeoutError:
        return "no answer (client timeout)"
    except OSError as error:
        return f"{type(error).__name__}"
    finally:
        writer.close()


async def _drain(reader: asyncio.StreamReader) -> None:
    while await reader.read(1 << 16):
        pass
