"""SIGTERM while 200 watches and some lists are open: a clean exit within 10 s, nothing lost.

`manage.py serve --no-seed` runs as users run it (with and without the embedded controller).
Four clients open 200 HTTP watches over raw sockets and 4 websocket watches, a writer creates
runtimes, lists are in flight; then SIGTERM. The process must be gone within 10 s (the bound
the issue sets), every HTTP watch must end as a chunked stream ends (the last, empty chunk),
every websocket close with 1001, every list that got an answer must have got all of it, and
after a restart every write that was answered 201 is there.
/livez answers within a second while the load runs.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.support.api import runtime_manifest
from tests.support.availability import livez_stays_up
from tests.support.liveserver import prepare, serve_command, server_environment

GV = "/apis/nodus.dev/v1beta1"
WATCHES = 200
SOCKETS = 4  # websocket watches beside them, which must close with 1001 "going away"
EXIT_SECONDS = 10.0
# Who watches what: 50 watches each, well inside the 100 one client may hold.
WATCHERS = (("alice", "demo"), ("bob", "demo"), ("root", "demo"), ("charlie", "nodus"))
LISTERS = (("bob", "nodus"), ("root", "demo"), ("charlie", "nodus"))


async def watch(port: int, token: str, namespace: str, revision: str, opened: list[int]) -> bytes:
    """One HTTP watch from `revision` over a raw socket; returns every byte up to EOF."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    path = f"{GV}/namespaces/{namespace}/trainingruntimes?watch=1&resourceVersion={revision}"
    request = f"GET {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\r\n"
    writer.write(request.encode())
    await writer.drain()
    received = await reader.readuntil(b"\r\n\r\n")
    opened.append(1)
    while chunk := await reader.read(65536):
        received += chunk
    writer.close()
    return received


async def ws_watch(port: int, token: str, revision: str, opened: list[int]) -> int:
    """One websocket watch from `revision`; returns the close code the server sent."""
    path = f"{GV}/namespaces/demo/trainingruntimes?watch=1&resourceVersion={revision}"
    async with connect(
        f"ws://127.0.0.1:{port}{path}",
        origin=f"http://127.0.0.1:{port}",  # type: ignore[arg-type]
        additional_headers={"Authorization": f"Bearer {token}"},
        ping_interval=None,
    ) as socket:
        opened.append(1)
        try:
            while True:
                await socket.recv()
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else -1


async def raw_list(port: int, token: str, namespace: str) -> bytes:
    """One list on a connection of its own, read to EOF (b"" if never answered)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = (
            f"GET {GV}/namespaces/{namespace}/trainingruntimes HTTP/1.1\r\nHost: test\r\n"
            f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        return await reader.read()
    except OSError:
        return b""


def complete(answer: bytes) -> bool:
    """A whole HTTP/1.1 response: its body as long as Content-Length, or chunks to the end."""
    head, _, body = answer.partition(b"\r\n\r\n")
    headers = {
        line.split(b":", 1)[0].strip().lower(): line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")[1:]
        if b":" in line
    }
    if b"content-length" in headers:
        return len(body) == int(headers[b"content-length"])
    return body.endswith(b"0\r\n\r\n")


async def load_then_terminate(
    process: subprocess.Popen[bytes], port: int, tokens: dict[str, str]
) -> tuple[list[bytes], list[bytes], list[int], list[str], float]:
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {tokens['alice']}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as alice:
        for n in range(3):  # something for the watches to start after, and to list
            created = await alice.post(
                f"{GV}/namespaces/demo/trainingruntimes", json=runtime_manifest(f"before-{n}")
            )
            assert created.status_code == 201, created.text
        listed = await alice.get(f"{GV}/namespaces/demo/trainingruntimes")
        revision = listed.json()["metadata"]["resourceVersion"]
        opened: list[int] = []
        watches = [
            asyncio.create_task(watch(port, tokens[who], namespace, revision, opened))
            for n in range(WATCHES)
            for who, namespace in [WATCHERS[n % len(WATCHERS)]]
        ]
        sockets = [
            asyncio.create_task(ws_watch(port, tokens["alice"], revision, opened))
            for _ in range(SOCKETS)
        ]
        deadline = time.monotonic() + 120
        while len(opened) < WATCHES + SOCKETS:
            assert time.monotonic() < deadline, f"only {len(opened)} watches opened"
            ended = [w for w in [*watches, *sockets] if w.done()]
            assert not ended, f"a watch ended before the SIGTERM: {ended[0]}"
            await asyncio.sleep(0.1)

        acknowledged: list[str] = []
        stop = asyncio.Event()

        async def writer() -> None:
            n = 0
            while not stop.is_set():
                name = f"write-{n}"
                n += 1
                try:
                    answer = await alice.post(
                        f"{GV}/namespaces/demo/trainingruntimes", json=runtime_manifest(name)
                    )
                except httpx.HTTPError:
                    await asyncio.sleep(0.05)  # the server is going: nothing was acknowledged
                    continue
                if answer.status_code == 201:
                    acknowledged.append(name)

        # /livez answers within a second while the watches, the writer and the lists run.
        with livez_stays_up(url):
            writing = asyncio.create_task(writer())
            await asyncio.sleep(1.0)
            lists = [
                asyncio.create_task(raw_list(port, tokens[who], namespace))
                for who, namespace in LISTERS * 2
            ]
            await asyncio.sleep(0.3)
        assert process.poll() is None
        terminated = time.monotonic()
        os.kill(process.pid, signal.SIGTERM)
        while process.poll() is None and time.monotonic() - terminated < EXIT_SECONDS + 20:
            await asyncio.sleep(0.05)
        took = time.monotonic() - terminated
        stop.set()
        await writing
        streams = await asyncio.wait_for(asyncio.gather(*watches), 30)
        answers = await asyncio.wait_for(asyncio.gather(*lists), 30)
        closes = await asyncio.wait_for(asyncio.gather(*sockets), 30)
    return streams, answers, closes, acknowledged, took


@pytest.mark.parametrize("controller", ["0", "1"], ids=["alone", "with-controller"])
def test_sigterm_ends_watches_answers_what_is_in_flight_and_exits_within_10_s(
    tmp_path: Path, controller: str
) -> None:
    (tmp_path / "static").mkdir()
    tokens = prepare(tmp_path, server_environment(tmp_path))
    with serve_command(tmp_path, NODUS_EMBEDDED_CONTROLLER=controller) as (process, port):
        streams, answers, closes, acknowledged, took = asyncio.run(
            load_then_terminate(process, port, tokens)
        )
        log = (tmp_path / "serve.log").read_text()
        assert process.poll() is not None, f"still running {took:.1f} s after SIGTERM"
        assert took < EXIT_SECONDS, f"exited {took:.1f} s after SIGTERM:\n{log[-3000:]}"
        assert "took too long to shut down" not in log

    for stream in streams:
        assert stream.startswith(b"HTTP/1.1 200"), stream[:200]
        assert stream.endswith(b"0\r\n\r\n"), stream[-200:]  # ended as a stream ends
    assert closes == [1001] * SOCKETS
    for answer in answers:  # in flight or refused, never cut off half way
        if answer:
            assert answer.startswith((b"HTTP/1.1 200", b"HTTP/1.1 429")), answer[:200]
            assert complete(answer), answer[-200:]
    assert len(acknowledged) > 0

    with serve_command(tmp_path, NODUS_EMBEDDED_CONTROLLER=controller) as (_again, port):
        answer = httpx.get(
            f"http://127.0.0.1:{port}{GV}/namespaces/demo/trainingruntimes",
            headers={"Authorization": f"Bearer {tokens['alice']}"},
            timeout=30,
        )
    items = answer.json()["items"]
    present = {item["metadata"]["name"] for item in items}
    lost = [name for name in acknowledged if name not in present]
    assert not lost, f"acknowledged but gone after the restart: {lost}"


def test_sigterm_writes_the_token_uses_it_had_batched(tmp_path: Path) -> None:
    """A token's use is noted in memory and written in batches (NODUS_TOKEN_TOUCH_SECONDS); a
    SIGTERM writes the batch before the process exits. The batches are an hour apart here, so
    only the shutdown can have written it."""
    import sqlite3

    from django.contrib.auth import get_user_model

    from runtimes.storage.models import ApiToken

    (tmp_path / "static").mkdir()
    tokens = prepare(tmp_path, server_environment(tmp_path))
    with serve_command(tmp_path, NODUS_TOKEN_TOUCH_SECONDS="3600") as (process, port):
        answer = httpx.get(
            f"http://127.0.0.1:{port}{GV}/namespaces/demo/trainingruntimes",
            headers={"Authorization": f"Bearer {tokens['bob']}"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=EXIT_SECONDS) == 0

    with sqlite3.connect(tmp_path / "nodus.sqlite3") as database:
        used = database.execute(
            f"SELECT u.username FROM {ApiToken._meta.db_table} t "
            f"JOIN {get_user_model()._meta.db_table} u ON u.id = t.user_id "
            "WHERE t.last_used_at IS NOT NULL"
        ).fetchall()
    assert used == [("bob",)]
