"""The fan-out baseline: a bare ASGI broadcast of watch lines over chunked HTTP, served by daphne.

    .venv/bin/daphne -p PORT benchmarks.fanout:application

`GET /watch` opens a stream (200, chunked, one line per event, as our watch sends them).
`POST /publish` with {"lines": [...], "interval": s} sends each line to every open stream, one
every `interval` seconds, noting the time each was sent (by the resourceVersion in it); `GET
/times` answers those times. No Django, no database, no hub: what is left is daphne and the
per-connection queue, the least any watch server on this stack pays per event and watcher.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

Scope = dict[str, Any]
_streams: set[asyncio.Queue[bytes]] = set()
_sent: dict[str, float] = {}
_tasks: set[asyncio.Task[None]] = set()


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _broadcast(lines: list[str], interval: float) -> None:
    began = time.monotonic()
    for i, line in enumerate(lines):
        await asyncio.sleep(max(0.0, began + i * interval - time.monotonic()))
        data = line.encode()
        revision = orjson.loads(data)["object"]["metadata"]["resourceVersion"]
        _sent[revision] = time.time()
        for queue in _streams:
            queue.put_nowait(data)


async def _watch(receive: Any, send: Any) -> None:
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    _streams.add(queue)
    try:
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        while True:
            data = await queue.get()
            await send({"type": "http.response.body", "body": data, "more_body": True})
    finally:
        _streams.discard(queue)


async def application(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path, method = scope["path"], scope["method"]
    if path == "/watch":
        await _watch(receive, send)
    elif path == "/publish" and method == "POST":
        request = orjson.loads(await _body(receive))
        task = asyncio.create_task(_broadcast(request["lines"], float(request["interval"])))
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)
        await _answer(send, 202, b"{}")
    elif path == "/times":
        await _answer(send, 200, orjson.dumps(_sent))
    elif path == "/livez":
        await _answer(send, 200, orjson.dumps({"streams": len(_streams)}))
    else:
        await _answer(send, 404, b"{}")
