"""Flow control as an ASGI middleware: what a request is, which flow and priority level it goes
to, fair queuing under load, and 429 only past a full queue or a spent wait."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.http import HttpRequest, HttpResponse

from runtimes.accounts import access
from runtimes.accounts.tokens import create_token, user_for
from runtimes.api.fairqueuing import EXEMPT, GLOBAL_DEFAULT, WORKLOAD_HIGH
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
    Send,
    classify,
    client_of,
    flow_of,
    uid,
)
from runtimes.api.viewpool import pooled

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


def small(**overrides: Any) -> Limits:
    return Limits(**{"seats": 4, "list_width": 2, "queue_length": 3, "queue_seconds": 5.0,
                     **overrides})  # fmt: skip


def create_as(fc: FlowControl, who: str) -> asyncio.Task[list[Message]]:
    """A create with `who` as its Authorization header, through `fc`, as a task."""
    return asyncio.create_task(call(fc, http(COLLECTION, method="POST", authorization=who)))


def test_it_sends_the_flow_schema_and_priority_level_uids_kube_sends() -> None:
    async def scenario() -> list[Message]:
        gate = Gate()
        gate.open.set()
        return await call(FlowControl(gate, small()), http(COLLECTION + "/a"))

    start = asyncio.run(scenario())[0]
    headers = dict(start["headers"])
    assert (
        headers[b"x-kubernetes-pf-flowschema-uid"] == uid("flowschema", "global-default").encode()
    )
    assert headers[b"x-kubernetes-pf-prioritylevel-uid"] == (
        uid("prioritylevel", GLOBAL_DEFAULT).encode()
    )


@pytest.mark.django_db
def test_platform_admins_are_exempt_the_controller_is_workload_high(
    actors: dict[str, Any], settings: Any
) -> None:
    # Who is asking is known from the token memo only (no database call before a seat).
    settings.NODUS_ACCESS_CACHE_SECONDS = 2.0

    def flow(user: Any) -> tuple[str, str]:
        token = create_token(user, "t")[1]
        user_for(token)  # looked up once: remembered, as after a first request
        found = flow_of(http(COLLECTION, authorization=f"Bearer {token}"))
        return found.schema, found.level

    controller = get_user_model().objects.create_user(access.CONTROLLER_ACCOUNT)
    assert flow(actors["root"]) == ("exempt", EXEMPT)
    assert flow(controller) == ("nodus-controller", WORKLOAD_HIGH)
    assert flow(actors["alice"]) == ("global-default", GLOBAL_DEFAULT)
    unknown = flow_of(http(COLLECTION, authorization="Bearer never-seen"))
    assert (unknown.level, unknown.distinguisher) == (GLOBAL_DEFAULT, client_of(
        http(COLLECTION, authorization="Bearer never-seen")))  # fmt: skip


def test_a_burst_from_one_client_queues_within_its_seats_and_all_succeed() -> None:
    async def scenario() -> tuple[list[int], int]:
        gate = Gate()
        app = FlowControl(gate, small(seats=8, queue_length=50))
        burst = [create_as(app, "Bearer a") for _ in range(16)]
        await asyncio.sleep(0.05)
        running = gate.entered
        gate.open.set()
        answers = await asyncio.gather(*burst)
        return [int(a[0]["status"]) for a in answers], running

    codes, running = asyncio.run(scenario())
    # Its level's own 3 of the 8 seats (a flow does not borrow past them): the other 13 waited.
    assert running == 3
    assert codes == [200] * 16


async def burst(app: FlowControl, gate: Gate, n: int) -> list[list[Message]]:
    """n creates from one client at once, held at the gate until all have arrived."""
    gate.open.clear()
    tasks = [create_as(app, "Bearer g") for _ in range(n)]
    await asyncio.sleep(0.05)
    gate.open.set()
    return list(await asyncio.gather(*tasks))


def test_a_burst_past_its_queues_is_refused_with_retry_after_and_a_status() -> None:
    async def scenario() -> list[list[Message]]:
        gate = Gate()
        return await burst(FlowControl(gate, small(seats=2, queue_length=2)), gate, 40)

    answers = asyncio.run(scenario())
    refused = [a for a in answers if a[0]["status"] == 429]
    # 1 running (its level's own seat), and the flow's hand of 6 queues holds 2 each: the rest
    # are refused.
    assert len(refused) == 40 - 1 - 6 * 2
    start, body = refused[0]
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == b"1"
    assert b"x-kubernetes-pf-prioritylevel-uid" in headers
    status = orjson.loads(body["body"])
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "TooManyRequests", 429)
    assert status["details"]["retryAfterSeconds"] == 1
    assert "queue already wait" in status["fix"]
    assert status["requestId"] == headers[b"x-request-id"].decode()


def test_a_bursts_refusals_are_answered_spread_over_a_second_holding_no_seat() -> None:
    """Refused together and told the same Retry-After, a burst's excess would come back
    together: each refusal made as its request arrives is answered after a random part of a
    second (NODUS_FLOW_REFUSAL_SPREAD_SECONDS), holding no seat meanwhile."""

    async def scenario() -> tuple[int, int, list[float], list[int]]:
        gate = Gate()
        app = FlowControl(gate, small(seats=2, queue_length=2))
        loop = asyncio.get_running_loop()
        started = loop.time()
        refused: list[float] = []

        async def one() -> int:
            answer = await call(app, http(COLLECTION, method="POST", authorization="Bearer g"))
            if answer[0]["status"] == 429:
                refused.append(loop.time() - started)
            return int(answer[0]["status"])

        tasks = [asyncio.create_task(one()) for _ in range(40)]
        await asyncio.sleep(0.02)
        at_once = len(refused)
        in_use = app.dispatcher.in_use(GLOBAL_DEFAULT)
        await asyncio.sleep(1.2)
        gate.open.set()
        codes = await asyncio.gather(*tasks)
        return at_once, in_use, refused, codes

    at_once, in_use, refused, codes = asyncio.run(scenario())
    # Without the spread, all 27 were answered within a millisecond; with it, about 2% of them
    # are answered within the first 20 ms.
    assert at_once <= 10
    assert in_use == 1  # the one running: the refusals being held hold no seat
    assert len(refused) == 40 - 1 - 6 * 2
    assert max(refused) < 1.2  # all answered within the spread, before the gate opened
    assert max(refused) - min(refused) > 0.3  # 27 random parts of a second, not one moment
    assert codes.count(200) == 1 + 6 * 2


def test_refusals_that_keep_coming_are_told_to_wait_longer() -> None:
    """kube's dropped-requests tracker: a level's refusals in one second are judged at its
    next refusal in a later second; three or more per second of the current Retry-After
    double it, so clients refused together do not all come back together."""
    now = [1000.0]

    async def waits(app: FlowControl, gate: Gate) -> list[int]:
        told = []
        for start, body in (a for a in await burst(app, gate, 20) if a[0]["status"] == 429):
            seconds = int(dict(start["headers"])[b"retry-after"])
            assert orjson.loads(body["body"])["details"]["retryAfterSeconds"] == seconds
            told.append(seconds)
        return told

    async def scenario() -> list[list[int]]:
        gate = Gate()
        app = FlowControl(gate, small(seats=2, queue_length=1), clock=lambda: now[0])
        first = await waits(app, gate)
        now[0] += 1  # the next second: the first one's refusals count
        second = await waits(app, gate)
        now[0] += 60  # a quiet minute: a refusal then takes a second off
        third = await waits(app, gate)
        return [first, second, third]

    first, second, third = asyncio.run(scenario())
    assert first == [1] * (20 - 1 - 6)
    assert second == [2] * (20 - 1 - 6)
    assert third == [1] * (20 - 1 - 6)


def test_a_polite_client_is_served_before_a_greedy_clients_backlog() -> None:
    """Fair queuing between flows: the greedy flow's 29 waiting requests, spread over its hand
    of 6 queues, do not stand in front of another flow's one request: the seat the greedy
    flow's running request frees goes to the polite one."""

    async def scenario() -> list[str]:
        order: list[str] = []
        release = asyncio.Event()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            who = dict(scope["headers"])[b"authorization"].decode()
            order.append(who)
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await release.wait()
            await send({"type": "http.response.body", "body": b""})

        fc = FlowControl(app, small(seats=1, queue_length=100))

        tasks = [create_as(fc, "Bearer greedy") for _ in range(30)]
        await asyncio.sleep(0.05)
        tasks.append(create_as(fc, "Bearer polite"))
        await asyncio.sleep(0.05)
        for _ in range(5):  # five requests finish, one at a time
            release.set()
            await asyncio.sleep(0)
            release.clear()
            await asyncio.sleep(0.02)
        release.set()
        await asyncio.gather(*tasks)
        return order

    order = asyncio.run(scenario())
    assert order.index("Bearer polite") == 1, order[:10]


async def beside_a_light_request(step: Any) -> list[tuple[int, int]]:
    """A greedy flow's five requests, one seat each (global-default has 1 of 4): the first
    runs, and the second is dealt the seat it frees while three more wait behind; then a
    polite request comes, served on a seat it borrows. `step()` is the application's work for
    a greedy request before it answers. How many greedy requests had done that work and had
    been answered: while the polite one was in service; 150 ms later (past the 50 ms bound on
    each step's giving way), it still in service; in the end."""
    greedy_go, polite_done = asyncio.Event(), asyncio.Event()
    worked: list[int] = []
    answered: list[int] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        polite = dict(scope["headers"])[b"authorization"] == b"Bearer polite"
        if polite:
            await polite_done.wait()
        else:
            await (asyncio.sleep(0.01) if not worked else greedy_go.wait())
            await step()
            worked.append(1)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        answered.append(0 if polite else 1)

    fc = FlowControl(app, small(seats=4, queue_length=10))

    greedy = [create_as(fc, "Bearer greedy") for _ in range(5)]
    await asyncio.sleep(0.03)  # the first answered; the second dealt its seat
    polite = create_as(fc, "Bearer polite")  # light: its flow has nothing else waiting
    await asyncio.sleep(0.01)
    greedy_go.set()
    counts = []
    for pause in (0.02, 0.15):
        await asyncio.sleep(pause)
        counts.append((len(worked), sum(answered)))
    polite_done.set()
    await asyncio.gather(polite, *greedy)
    counts.append((len(worked), sum(answered)))
    return counts


def test_a_backlogged_flows_answer_gives_way_while_a_light_request_is_served() -> None:
    async def nothing() -> None:
        return None

    beside, past_the_bound, in_the_end = asyncio.run(beside_a_light_request(nothing))
    # The polite request runs at once, on a seat workload-high leaves idle. The greedy flow's
    # second request, dealt while others of its flow waited, does its work and then waits
    # before its answer starts, for 50 ms at most; the rest wait for the level's seat.
    assert beside == (2, 1)
    assert past_the_bound == (2, 2)
    assert in_the_end == (5, 5)


def test_a_backlogged_flows_request_dealt_beside_a_light_one_waits_before_the_application() -> None:
    async def scenario() -> tuple[int, int, int]:
        entered: list[str] = []
        first_done, polite_done = asyncio.Event(), asyncio.Event()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            who = dict(scope["headers"])[b"authorization"].decode()
            entered.append(who)
            if who == "Bearer polite":
                await polite_done.wait()
            elif entered.count(who) <= 2:
                await first_done.wait()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        fc = FlowControl(app, small(seats=6, queue_length=10))  # global-default's own: 2

        greedy = [create_as(fc, "Bearer greedy") for _ in range(5)]  # two run, three wait
        await asyncio.sleep(0.01)
        polite = create_as(fc, "Bearer polite")  # light, on a seat it borrows but its level counts
        await asyncio.sleep(0.01)
        first_done.set()  # the two answer; one seat is left, for the third, two behind it
        await asyncio.sleep(0.03)
        beside = entered.count("Bearer greedy")
        await asyncio.sleep(0.05)
        past_the_bound = entered.count("Bearer greedy")
        polite_done.set()
        await asyncio.gather(polite, *greedy)
        return beside, past_the_bound, entered.count("Bearer greedy")

    beside, past_the_bound, in_the_end = asyncio.run(scenario())
    assert beside == 2  # the third waits before Django sees it
    assert past_the_bound >= 3  # 50 ms at most
    assert in_the_end == 5


@pytest.mark.django_db  # the pool checks its thread's connection before and after a view
def test_a_backlogged_flows_pooled_view_waits_while_a_light_request_is_served() -> None:
    def view(request: HttpRequest) -> HttpResponse:
        return HttpResponse(b"")

    async def through_the_pool() -> None:
        await pooled(view)(HttpRequest())

    beside, past_the_bound, in_the_end = asyncio.run(beside_a_light_request(through_the_pool))
    # The second request's view waits before it starts (then, past the bound, it runs, and
    # the rest of its answer waits after it).
    assert beside == (1, 1)
    assert past_the_bound == (2, 2)
    assert in_the_end == (5, 5)


@pytest.mark.django_db  # the pool checks its thread's connection before and after a view
def test_a_backlogged_flows_view_already_running_gives_way_at_its_next_query() -> None:
    """A greedy flow's view already on its thread when a polite request comes: its next query
    waits (off the loop) until the polite one is answered."""
    started, go = threading.Event(), threading.Event()
    queried: list[float] = []

    def view(request: HttpRequest) -> HttpResponse:
        started.set()
        go.wait(5)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        queried.append(time.monotonic())
        return HttpResponse(b"")

    async def scenario() -> tuple[bool, float, float]:
        polite_done = asyncio.Event()
        greedy_seen = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if dict(scope["headers"])[b"authorization"] == b"Bearer polite":
                await polite_done.wait()
            else:
                greedy_seen.append(1)
                if len(greedy_seen) == 1:  # the first holds the seat while the rest queue
                    await asyncio.sleep(0.01)
                else:  # the second, dealt with two behind it, and the rest run the view
                    await pooled(view)(HttpRequest())
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        fc = FlowControl(app, small(seats=4, queue_length=10))

        greedy = [create_as(fc, "Bearer greedy") for _ in range(4)]
        await asyncio.to_thread(started.wait, 5)  # the second, dealt with two behind it, runs
        polite = create_as(fc, "Bearer polite")  # light, on a borrowed seat
        await asyncio.sleep(0.01)
        go.set()
        await asyncio.sleep(0.03)
        held = not queried
        answered = time.monotonic()
        polite_done.set()
        await asyncio.gather(polite, *greedy)
        return held, answered, queried[0]

    held, polite_answered, first_query = asyncio.run(scenario())
    assert held  # within the 50 ms bound, the query waited for the polite request
    assert first_query >= polite_answered


def test_a_watch_gives_its_seats_back_once_its_response_starts() -> None:
    async def scenario() -> tuple[int, list[Message]]:
        gate = Gate()
        app = FlowControl(gate, small(seats=2))
        watch = asyncio.create_task(
            call(app, http(COLLECTION, "watch=1", authorization="Bearer w"))
        )
        await asyncio.sleep(0.01)  # the gate sent the response start: the list is done
        during = app.dispatcher.in_use(GLOBAL_DEFAULT)
        listed = await asyncio.wait_for(
            asyncio.gather(
                call(app, http(COLLECTION, authorization="Bearer w")),
                asyncio.sleep(0.01, result=gate.open.set()),
            ),
            5,
        )
        await watch
        return during, listed[0]

    during, listed = asyncio.run(scenario())
    assert during == 0
    assert listed[0]["status"] == 200


def test_a_seat_is_free_once_its_response_is_complete_though_the_application_lingers() -> None:
    """Django closes a request after its last byte is sent (signals, database connections): a
    client that sends its next request as soon as it has the answer finds its seats free."""

    async def scenario() -> tuple[list[int], int]:
        cleanup = asyncio.Event()

        async def lingering(scope: Scope, receive: Receive, send: Send) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"listed"})
            await cleanup.wait()

        app = FlowControl(lingering, small(seats=2, queue_length=1, queue_seconds=0.1))
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
        during = app.dispatcher.in_use(GLOBAL_DEFAULT)
        cleanup.set()
        await asyncio.gather(*tails)
        return statuses, during

    statuses, during = asyncio.run(scenario())
    assert statuses == [200] * 5
    assert during == 0


def test_seats_come_back_when_the_application_fails() -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    app = FlowControl(failing, small())
    for _ in range(3):
        with pytest.raises(RuntimeError):
            asyncio.run(call(app, http(COLLECTION)))
    assert app.dispatcher.in_use(GLOBAL_DEFAULT) == 0


def test_a_websocket_past_the_watch_bound_gets_an_error_event_and_close_4429() -> None:
    async def scenario() -> list[Message]:
        app = FlowControl(Gate(), small(watches=1))
        app.watches = 1
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


def test_a_wait_that_runs_out_gets_429() -> None:
    async def scenario() -> int:
        gate = Gate()
        app = FlowControl(gate, small(seats=1, queue_seconds=0.1))
        holder = asyncio.create_task(call(app, http(COLLECTION + "/a", authorization="Bearer h")))
        await asyncio.sleep(0.01)
        waited = await call(app, http(COLLECTION + "/a", authorization="Bearer p"))
        gate.open.set()
        await holder
        return int(waited[0]["status"])

    assert asyncio.run(scenario()) == 429
