"""Flow control: which pool a request sits in, who its client is, and 429 past the seats."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from runtimes.api.flowcontrol import (
    LIST,
    OTHER,
    WATCH,
    Demand,
    FlowControl,
    Limits,
    Message,
    Receive,
    Scope,
    SeatPools,
    Send,
    classify,
    client_of,
)

COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


def http(path: str, query: str = "", method: str = "GET", **headers: str) -> Scope:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
        "client": ("10.0.0.7", 4242),
        "scheme": "http",
    }


@pytest.mark.parametrize(
    ("scope", "demand"),
    [
        (http(COLLECTION), Demand(LIST)),
        (http("/apis/nodus.dev/v1beta1/trainingruntimes"), Demand(LIST)),
        (http(COLLECTION + "/one"), Demand(OTHER)),
        (http(COLLECTION, method="POST"), Demand(OTHER)),
        (http(COLLECTION + "/one/status", method="PATCH"), Demand(OTHER)),
        (http(COLLECTION, "watch=1"), Demand(WATCH, lists_first=True)),
        (http(COLLECTION, "watch=true&resourceVersion=0"), Demand(WATCH, lists_first=True)),
        (http(COLLECTION, "watch=1&resourceVersion=42"), Demand(WATCH)),
        (
            http(COLLECTION, "watch=1&resourceVersion=42&sendInitialEvents=true"),
            Demand(WATCH, lists_first=True),
        ),
        (http(COLLECTION, "watch=1&sendInitialEvents=false"), Demand(WATCH)),
        ({**http(COLLECTION, "watch=1&resourceVersion=9"), "type": "websocket"}, Demand(WATCH)),
        ({**http("/ws/live"), "type": "websocket"}, Demand(WATCH)),
        (http("/apis/nodus.dev/v1beta1"), Demand(OTHER)),
        (http("/runtimes/demo/x"), Demand(OTHER)),
        (http("/livez"), None),
        (http("/healthz"), None),
        (http(COLLECTION + "/"), Demand(LIST)),
        (http("/readyz/database"), None),
        (http("/static/console/console.css"), None),
    ],
)
def test_it_puts_each_request_in_its_pool(scope: Scope, demand: Demand | None) -> None:
    assert classify(scope) == demand


def test_it_tells_clients_apart_by_token_then_session_then_address() -> None:
    alice = client_of(http(COLLECTION, authorization="Bearer alice-token"))
    assert alice.startswith("token:")
    assert "alice-token" not in alice
    assert alice == client_of(http("/x", authorization="Bearer alice-token", cookie="sessionid=s"))
    assert alice != client_of(http(COLLECTION, authorization="Bearer bob-token"))
    protocol = {**http(COLLECTION), "subprotocols": ["base64url.bearer.authorization.k8s.io.YQ"]}
    assert client_of(protocol).startswith("token:")
    session = client_of(http("/", cookie="csrftoken=c; sessionid=abc"))
    assert session.startswith("session:")
    assert client_of(http("/")) == "address:10.0.0.7"


def limits(**per_client: int) -> Limits:
    return Limits(
        per_client={LIST: 2, WATCH: 3, OTHER: 2, **per_client},
        inflight={LIST: 3, WATCH: 100, OTHER: 100},
    )


def test_it_counts_seats_per_client_and_for_the_process_all_or_none() -> None:
    pools = SeatPools(limits())

    assert pools.acquire([LIST], "a") is None
    assert pools.acquire([LIST], "a") is None
    assert "this client already has 2 list" in (pools.acquire([LIST], "a") or "")
    assert pools.acquire([LIST], "b") is None
    assert "the server has 3 list" in (pools.acquire([LIST], "c") or "")
    # A watch that lists first needs both seats; with no list seat it takes no watch seat.
    assert pools.acquire([WATCH, LIST], "c") is not None
    assert pools.taken(WATCH) == 0
    pools.release(LIST, "a")
    assert pools.acquire([WATCH, LIST], "c") is None
    assert (pools.taken(WATCH, "c"), pools.taken(LIST, "c"), pools.taken(LIST)) == (1, 1, 3)


class Gate:
    """An inner ASGI app that answers only when its gate opens, so tests hold seats."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.entered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.entered += 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await self.open.wait()
        await send({"type": "http.response.body", "body": b"done"})


async def call(app: Any, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def test_past_its_seats_a_client_gets_429_with_retry_after_while_others_are_served() -> None:
    async def scenario() -> tuple[list[Message], list[Message], int]:
        gate = Gate()
        app = FlowControl(gate, limits())
        herd = [
            asyncio.create_task(call(app, http(COLLECTION, authorization="Bearer herd")))
            for _ in range(2)
        ]
        await asyncio.sleep(0.01)
        refused = await call(app, http(COLLECTION, authorization="Bearer herd"))
        other = asyncio.create_task(
            call(app, http(COLLECTION, method="POST", authorization="Bearer writer"))
        )
        await asyncio.sleep(0.01)
        gate.open.set()
        await asyncio.gather(*herd)
        written = await other
        return refused, written, gate.entered

    refused, written, entered = asyncio.run(scenario())

    start, body = refused
    assert start["status"] == 429
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == b"1"
    status = orjson.loads(body["body"])
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "TooManyRequests", 429)
    assert status["details"]["retryAfterSeconds"] == 1
    assert "2 list requests in flight" in status["fix"]
    assert status["docs"].endswith("/docs/errors/TooManyRequests")
    assert status["requestId"] == headers[b"x-request-id"].decode()
    assert written[0]["status"] == 200  # the writer was never held up by the herd
    assert entered == 3  # the refused list never reached the application


def test_a_watch_gives_its_list_seat_back_once_its_response_starts() -> None:
    async def scenario() -> tuple[int, int, list[Message]]:
        gate = Gate()
        app = FlowControl(gate, limits())
        watch = asyncio.create_task(
            call(app, http(COLLECTION, "watch=1", authorization="Bearer w"))
        )
        await asyncio.sleep(0.01)  # the gate sent the response start: the list is done
        during = (app.pools.taken(LIST), app.pools.taken(WATCH))
        listed = await asyncio.wait_for(
            asyncio.gather(
                call(app, http(COLLECTION, authorization="Bearer w")),
                asyncio.sleep(0.01, result=gate.open.set()),
            ),
            5,
        )
        await watch
        return *during, listed[0]

    lists, watches, listed = asyncio.run(scenario())
    assert (lists, watches) == (0, 1)
    assert listed[0]["status"] == 200


def test_a_seat_is_free_once_its_response_is_complete_though_the_application_lingers() -> None:
    """Django closes a request after its last byte is sent (signals, database connections): a
    client that sends its next request as soon as it has the answer is not refused for that."""

    async def scenario() -> tuple[list[int], int]:
        cleanup = asyncio.Event()

        async def lingering(scope: Scope, receive: Receive, send: Send) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"listed"})
            await cleanup.wait()

        app = FlowControl(lingering, limits())
        statuses: list[int] = []
        tails: list[asyncio.Task[None]] = []
        for _ in range(5):  # one at a time, each right after the last answer arrived
            sent: list[Message] = []
            done = asyncio.Event()

            async def receive() -> Message:
                return {"type": "http.request", "body": b""}

            async def send(
                message: Message, sent: list[Message] = sent, done: asyncio.Event = done
            ) -> None:
                sent.append(message)
                if message["type"] == "http.response.body":
                    done.set()

            tails.append(
                asyncio.create_task(
                    app(http(COLLECTION, authorization="Bearer one"), receive, send)
                )
            )
            await done.wait()
            statuses.append(sent[0]["status"])
        during = app.pools.taken(LIST)
        cleanup.set()
        await asyncio.gather(*tails)
        return statuses, during

    statuses, during = asyncio.run(scenario())
    assert statuses == [200] * 5
    assert during == 0


def test_seats_come_back_when_the_application_fails() -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    app = FlowControl(failing, limits())
    for _ in range(3):
        with pytest.raises(RuntimeError):
            asyncio.run(call(app, http(COLLECTION)))
    assert app.pools.taken(LIST) == 0


def test_a_websocket_past_its_seats_gets_an_error_event_and_close_4429() -> None:
    async def scenario() -> list[Message]:
        app = FlowControl(Gate(), limits(watch=0))
        app.pools.limits.inflight[WATCH] = 0
        app.pools.limits.per_client[WATCH] = 1
        app.pools.acquire([WATCH], "address:10.0.0.7")
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "websocket.connect"}

        async def send(message: Message) -> None:
            sent.append(message)

        await app(
            {**http(COLLECTION, "watch=1&resourceVersion=1"), "type": "websocket"}, receive, send
        )
        return sent

    accept, error, close = asyncio.run(scenario())
    assert accept["type"] == "websocket.accept"
    event = orjson.loads(error["text"])
    assert (event["type"], event["object"]["code"]) == ("ERROR", 429)
    assert close == {"type": "websocket.close", "code": 4429}


def queueing(seconds: float = 5.0, length: int = 10) -> Limits:
    return Limits(
        per_client={LIST: 2, WATCH: 3, OTHER: 2},
        inflight={LIST: 2, WATCH: 100, OTHER: 100},
        queue_seconds=seconds,
        queue_length=length,
    )


def test_past_the_process_seats_requests_wait_their_turn_in_order() -> None:
    async def scenario() -> tuple[list[int], list[str]]:
        gate = Gate()
        app = FlowControl(gate, queueing())
        order: list[str] = []

        async def one(who: str) -> int:
            sent = await call(app, http(COLLECTION, authorization=f"Bearer {who}"))
            order.append(who)
            return int(sent[0]["status"])

        holders = [asyncio.create_task(one(f"h{n}")) for n in range(2)]
        await asyncio.sleep(0.01)
        waiting = []
        for n in range(4):  # four other clients: only the process's seats are full
            waiting.append(asyncio.create_task(one(f"w{n}")))
            await asyncio.sleep(0.01)
        assert gate.entered == 2
        gate.open.set()
        codes = await asyncio.gather(*holders, *waiting)
        return list(codes), order

    codes, order = asyncio.run(scenario())
    assert codes == [200] * 6  # nobody was sent away
    assert [who for who in order if who.startswith("w")] == ["w0", "w1", "w2", "w3"]


def test_a_full_queue_or_a_wait_that_runs_out_gets_429_and_the_client_limit_never_queues() -> None:
    async def scenario() -> dict[str, int]:
        gate = Gate()
        app = FlowControl(gate, queueing(seconds=0.2, length=1))

        async def one(who: str) -> int:
            sent = await call(app, http(COLLECTION, authorization=f"Bearer {who}"))
            return int(sent[0]["status"])

        holders = [asyncio.create_task(one("holder")) for _ in range(2)]
        await asyncio.sleep(0.01)
        queued = asyncio.create_task(one("patient"))  # waits 0.2 s, then 429
        await asyncio.sleep(0.01)
        codes = {
            "queue full": await one("late"),
            "own limit": await one("holder"),  # the client's own seats: 429 at once
            "waited out": await queued,
        }
        gate.open.set()
        await asyncio.gather(*holders)
        return codes

    codes = asyncio.run(scenario())
    assert codes == {"queue full": 429, "own limit": 429, "waited out": 429}
