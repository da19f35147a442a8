"""Draining: on shutdown watches end as streams end, requests in flight finish, new ones 429."""

from __future__ import annotations

import asyncio

import orjson

from runtimes.api.draining import Draining, Registry, shut_down
from runtimes.api.flowcontrol import Message, Receive, Scope, Send, is_exempt, is_long_running

COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


def http(path: str, query: str = "", method: str = "GET") -> Scope:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [],
        "scheme": "http",
    }


class Server:
    """An inner app: watches stream until cancelled; writes take `write_seconds`."""

    def __init__(self, write_seconds: float = 0.2) -> None:
        self.write_seconds = write_seconds
        self.committed: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.accept"})
            await asyncio.sleep(3600)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if is_long_running(scope):
            await send({"type": "http.response.body", "body": b"", "more_body": True})
            while True:
                await send({"type": "http.response.body", "body": b"{}\n", "more_body": True})
                await asyncio.sleep(0.01)
        await asyncio.sleep(self.write_seconds)
        self.committed.append(scope["path"])
        await send({"type": "http.response.body", "body": b"created"})


async def call(app: Draining, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        if scope["type"] == "websocket":
            return {"type": "websocket.connect"}
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_it_ends_watches_cleanly_answers_writes_in_flight_and_refuses_new_requests() -> None:
    async def scenario() -> tuple[
        list[list[Message]], list[Message], list[Message], list[Message], bool, list[str]
    ]:
        registry = Registry()
        inner = Server()
        app = Draining(inner, is_long_running, is_exempt, registry)
        watches = [
            asyncio.create_task(call(app, http(COLLECTION, "watch=1&resourceVersion=1")))
            for _ in range(3)
        ]
        socket = asyncio.create_task(
            call(app, {**http(COLLECTION, "watch=1&resourceVersion=1"), "type": "websocket"})
        )
        write = asyncio.create_task(call(app, http(COLLECTION, method="POST")))
        await asyncio.sleep(0.05)
        stopped = asyncio.Event()
        shutdown = asyncio.create_task(shut_down(5.0, stopped.set, registry, lambda: 0))
        await asyncio.sleep(0.01)
        late = await call(app, http(COLLECTION + "/late", method="POST"))
        await asyncio.wait_for(shutdown, 5)
        ended = await asyncio.gather(*watches)
        done = stopped.is_set() and not registry.requests
        return ended, await write, await socket, late, done, inner.committed

    ended, write, socket, late, stopped, committed = asyncio.run(scenario())

    for messages in ended:
        assert messages[0]["status"] == 200
        assert messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert socket[-1] == {"type": "websocket.close", "code": 1001}
    assert write[-1]["body"] == b"created"  # finished and answered before the stop
    assert late[0]["status"] == 429
    assert committed == [COLLECTION]  # the late write never reached the application
    assert stopped


def test_a_request_arriving_while_draining_is_refused_untouched_but_health_is_served() -> None:
    async def scenario() -> tuple[list[Message], list[Message], list[str]]:
        registry = Registry(draining=True)
        inner = Server(write_seconds=0)
        app = Draining(inner, is_long_running, is_exempt, registry)
        refused = await call(app, http(COLLECTION, method="POST"))
        livez = await call(app, http("/livez"))
        return refused, livez, inner.committed

    refused, livez, committed = asyncio.run(scenario())
    start, body = refused
    assert start["status"] == 429
    assert (b"retry-after", b"1") in start["headers"]
    status = orjson.loads(body["body"])
    assert status["message"] == "The apiserver is shutting down, please try again later."
    assert committed == ["/livez"]  # the refused write never reached the application
    assert livez[0]["status"] == 200


def test_at_the_deadline_it_stops_whatever_still_runs() -> None:
    async def scenario() -> tuple[bool, float]:
        registry = Registry()
        app = Draining(Server(write_seconds=30), is_long_running, is_exempt, registry)
        slow = asyncio.create_task(call(app, http(COLLECTION, method="POST")))
        await asyncio.sleep(0.01)
        stopped = asyncio.Event()
        loop = asyncio.get_running_loop()
        began = loop.time()
        await shut_down(
            2.3, stopped.set, registry, lambda: 0
        )  # 0.3 s to drain, 2 s kept for the stop
        took = loop.time() - began
        slow.cancel()
        return stopped.is_set(), took

    stopped, took = asyncio.run(scenario())
    assert stopped
    assert took < 2.0
