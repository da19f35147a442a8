"""Fair queuing: priority levels sharing seats, borrowing, shuffle-sharded queues, refusals."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from runtimes.api.fairqueuing import (
    EXEMPT,
    GLOBAL_DEFAULT,
    WORKLOAD_HIGH,
    Dispatcher,
    Level,
    Refused,
    RetryAfter,
    Ticket,
)

LEVELS = (Level(EXEMPT), Level(WORKLOAD_HIGH, shares=40), Level(GLOBAL_DEFAULT, shares=20))


def dispatcher(seats: int = 6, wait: float = 5.0, queue_length: int = 4) -> Dispatcher:
    levels = tuple(Level(lv.name, lv.shares, queue_length=queue_length) for lv in LEVELS)
    return Dispatcher(levels, seats, wait)


def test_levels_share_the_seats_by_their_shares() -> None:
    d = dispatcher(seats=6)
    assert (d.nominal(WORKLOAD_HIGH), d.nominal(GLOBAL_DEFAULT)) == (4, 2)


def test_exempt_requests_are_never_queued_nor_counted_against_others() -> None:
    async def scenario() -> list[object]:
        d = dispatcher(seats=1)
        return [await d.acquire(EXEMPT, "root") for _ in range(50)]

    assert all(isinstance(t, Ticket) for t in asyncio.run(scenario()))


def test_a_level_borrows_idle_seats_but_gives_way_to_a_waiting_level() -> None:
    async def scenario() -> tuple[int, bool]:
        d = dispatcher(seats=6)
        held = [await d.acquire(GLOBAL_DEFAULT, f"u{i}") for i in range(6)]  # 2 own + 4 borrowed
        assert all(isinstance(t, Ticket) for t in held)
        high = asyncio.create_task(d.acquire(WORKLOAD_HIGH, "controller"))
        more = asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "u9"))
        await asyncio.sleep(0.01)
        d.release(held[0])  # the freed seat goes to the level waiting for its own share
        await asyncio.sleep(0.01)
        served_first = high.done() and not more.done()
        for ticket in held[1:]:
            d.release(ticket)  # type: ignore[arg-type]
        await asyncio.gather(high, more)
        return d.in_use(GLOBAL_DEFAULT), served_first

    in_use, served_first = asyncio.run(scenario())
    assert served_first
    assert in_use == 1


def test_a_full_queue_is_refused_at_once_and_a_long_wait_times_out() -> None:
    async def scenario() -> tuple[Refused, Refused]:
        d = dispatcher(seats=1, wait=0.1, queue_length=1)
        holder = await d.acquire(GLOBAL_DEFAULT, "h")
        await d.acquire(WORKLOAD_HIGH, "w")  # borrows nothing: one seat, held
        # The flow's hand of 6 queues holds one each: the seventh waiter finds them full.
        waiting = [asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "g")) for _ in range(6)]
        await asyncio.sleep(0.01)
        full = await d.acquire(GLOBAL_DEFAULT, "g")
        timed_out = await waiting[0]
        await asyncio.gather(*waiting[1:])
        assert isinstance(holder, Ticket)
        assert isinstance(full, Refused)
        assert isinstance(timed_out, Refused)
        return full, timed_out

    full, timed_out = asyncio.run(scenario())
    assert full.reason == "queue-full"
    assert timed_out.reason == "time-out"


def test_another_flows_request_runs_before_a_greedy_flows_backlog() -> None:
    async def scenario() -> list[str]:
        d = dispatcher(seats=1, queue_length=50)
        first = await d.acquire(GLOBAL_DEFAULT, "greedy")
        assert isinstance(first, Ticket)
        served: list[str] = []

        async def one(flow: str) -> None:
            ticket = await d.acquire(GLOBAL_DEFAULT, flow)
            served.append(flow)
            await asyncio.sleep(0)
            d.release(ticket)  # type: ignore[arg-type]

        tasks = [asyncio.create_task(one("greedy")) for _ in range(40)]
        await asyncio.sleep(0.01)
        tasks.append(asyncio.create_task(one("polite")))
        await asyncio.sleep(0.01)
        d.release(first)
        await asyncio.gather(*tasks)
        return served

    served = asyncio.run(scenario())
    # The greedy flow's backlog fills its hand of 6 queues; the first seat freed after the
    # polite request arrived is its.
    assert served.index("polite") == 0, served[:10]


async def dealt_before_its_backlog(
    d: Dispatcher, waiting: int
) -> tuple[Ticket, Ticket, list[asyncio.Task[Ticket | Refused]]]:
    """A greedy flow's first request (2 seats, global-default's own), released; the next one,
    dealt its seats with `waiting` more of its flow waiting behind it; and those."""
    first = await d.acquire(GLOBAL_DEFAULT, "greedy", width=2)
    more = [asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "greedy", 2)) for _ in range(waiting + 1)]
    await asyncio.sleep(0.01)
    assert isinstance(first, Ticket)
    d.release(first)
    await asyncio.sleep(0.01)
    dealt = more[0].result()
    assert isinstance(dealt, Ticket)
    return first, dealt, more[1:]


def test_a_light_flow_borrows_beside_a_backlog_whose_request_in_service_gives_way() -> None:
    async def scenario() -> tuple[bool, bool, bool, bool, bool, int]:
        d = dispatcher(seats=6)  # global-default's own: 2; workload-high's 4 are idle
        first, backlogged, waiting = await dealt_before_its_backlog(d, 2)
        polite = await asyncio.wait_for(d.acquire(GLOBAL_DEFAULT, "polite", width=2), 1)
        assert isinstance(polite, Ticket)
        giving_way = asyncio.create_task(d.give_way(backlogged))
        light_goes_on = asyncio.create_task(d.give_way(polite))
        await asyncio.sleep(0.01)
        waited = not giving_way.done()
        d.release(polite)
        await asyncio.wait_for(giving_way, 1)
        greedy_waits = not any(t.done() for t in waiting)
        for t in waiting:
            t.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        return (
            first.light,
            backlogged.light,
            polite.light,
            light_goes_on.done(),
            waited and greedy_waits,
            d.light(GLOBAL_DEFAULT),
        )

    first, backlogged, polite, light_went_on, waited, light_left = asyncio.run(scenario())
    # The greedy flow's first request came with nothing else of its flow waiting: light. Its
    # next was dealt with two more waiting behind it: not light, so while the polite request
    # (light, on seats borrowed at once) is in service, it gives way at its steps; the polite
    # one never waits, and the greedy flow's backlog does not borrow.
    assert (first, backlogged, polite) == (True, False, True)
    assert light_went_on
    assert waited
    assert light_left == 0


def test_giving_way_is_bounded_and_ends_with_the_backlog() -> None:
    async def scenario() -> tuple[float, float]:
        d = dispatcher(seats=6)
        _, backlogged, waiting = await dealt_before_its_backlog(d, 1)
        await d.acquire(GLOBAL_DEFAULT, "polite", width=2)  # light, and never released here
        loop = asyncio.get_running_loop()
        started = loop.time()
        await d.give_way(backlogged)
        bounded = loop.time() - started
        waiting[0].cancel()  # the flow has nothing waiting now: no backlog to hold back
        await asyncio.gather(*waiting, return_exceptions=True)
        started = loop.time()
        await d.give_way(backlogged)
        return bounded, loop.time() - started

    bounded, without_a_backlog = asyncio.run(scenario())
    assert 0.04 <= bounded < 0.5  # GIVE_WAY_SECONDS, 50 ms: a stream of light ones never stops it
    assert without_a_backlog < 0.01


def test_a_thread_gives_way_without_blocking_the_loop_until_the_light_request_ends() -> None:
    async def scenario() -> tuple[bool, bool, float, float]:
        d = dispatcher(seats=6)
        _, backlogged, waiting = await dealt_before_its_backlog(d, 1)
        polite = await d.acquire(GLOBAL_DEFAULT, "polite", width=2)  # light
        assert isinstance(polite, Ticket)
        loop = asyncio.get_running_loop()
        on_thread = asyncio.create_task(asyncio.to_thread(d.give_way_on_thread, backlogged))
        await asyncio.sleep(0.005)  # the loop goes on while the thread waits
        waited = not on_thread.done()
        ended = loop.time()
        d.release(polite)  # the loop wakes the thread at once, well within the 50 ms bound
        await asyncio.wait_for(on_thread, 1)
        woken_after = loop.time() - ended
        await d.acquire(GLOBAL_DEFAULT, "reader", width=2)  # another light one, kept
        started = loop.time()
        await asyncio.to_thread(d.give_way_on_thread, backlogged)
        bounded = loop.time() - started
        waiting[0].cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        started = loop.time()
        await asyncio.to_thread(d.give_way_on_thread, backlogged)
        return waited, woken_after < 0.035, bounded, loop.time() - started

    waited, woken_at_once, bounded, without_a_backlog = asyncio.run(scenario())
    assert waited
    assert woken_at_once
    assert 0.04 <= bounded < 0.5  # GIVE_WAY_SECONDS
    assert without_a_backlog < 0.04  # nothing waits behind it: no reason to give way


def test_a_requests_steps_together_give_way_for_150_ms_at_most() -> None:
    """However many steps (a view's queries are steps), one request gives way 150 ms in all."""

    async def scenario() -> list[float]:
        d = dispatcher(seats=6)
        _, backlogged, waiting = await dealt_before_its_backlog(d, 1)
        await d.acquire(GLOBAL_DEFAULT, "polite", width=2)  # light, and never released here
        loop = asyncio.get_running_loop()
        steps = []
        for on_thread in (False, True, False, True):
            started = loop.time()
            if on_thread:
                await asyncio.to_thread(d.give_way_on_thread, backlogged)
            else:
                await d.give_way(backlogged)
            steps.append(loop.time() - started)
        waiting[0].cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        return steps

    steps = asyncio.run(scenario())
    assert all(0.04 <= step < 0.5 for step in steps[:3])  # 50 ms each: GIVE_WAY_SECONDS
    assert steps[3] < 0.04  # the 150 ms are spent (GIVE_WAY_TOTAL_SECONDS)


def test_a_flows_own_light_request_is_no_reason_to_give_way() -> None:
    async def scenario() -> tuple[float, bool]:
        d = dispatcher(seats=6)  # global-default's own: 2
        await d.acquire(GLOBAL_DEFAULT, "writer")  # light, and kept in service
        second = await d.acquire(GLOBAL_DEFAULT, "writer")
        more = [asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "writer")) for _ in range(3)]
        await asyncio.sleep(0.01)
        d.release(second)  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        backlogged = more[0].result()
        assert isinstance(backlogged, Ticket)
        assert not backlogged.light
        loop = asyncio.get_running_loop()
        started = loop.time()
        await d.give_way(backlogged)  # only its own flow's light request is in service
        alone = loop.time() - started
        await d.acquire(GLOBAL_DEFAULT, "reader")  # another flow's light one, on borrowed seats
        giving_way = asyncio.create_task(d.give_way(backlogged))
        await asyncio.sleep(0.01)
        waits = not giving_way.done()
        await giving_way
        for t in more[1:]:
            t.cancel()
        await asyncio.gather(*more[1:], return_exceptions=True)
        return alone, waits

    alone, waits_for_another = asyncio.run(scenario())
    assert alone < 0.01
    assert waits_for_another


def test_flows_without_a_backlog_borrow_beside_holders_without_one() -> None:
    async def scenario() -> tuple[bool, int]:
        d = dispatcher(seats=6)  # global-default's own: 2; workload-high's 4 are idle
        await d.acquire(GLOBAL_DEFAULT, "a")
        await d.acquire(GLOBAL_DEFAULT, "b")  # the level's own seats, held by two light flows
        borrowed = await asyncio.wait_for(d.acquire(GLOBAL_DEFAULT, "c"), 1)
        return isinstance(borrowed, Ticket), d.in_use(GLOBAL_DEFAULT)

    borrowed, in_use = asyncio.run(scenario())
    assert borrowed  # a third flow runs at once on a seat workload-high leaves idle
    assert in_use == 3


async def seated_beside(
    d: Dispatcher,
    listing: asyncio.Task[Ticket | Refused],
    others: list[asyncio.Task[Ticket | Refused]],
) -> tuple[bool, int]:
    """Gives back each of `others`' seats as soon as it is dealt, until `listing` is seated (or
    a hundred turns pass); whether it was, and how many of `others` still wait (then cancelled)."""
    for _ in range(100):
        if listing.done():
            break
        for request in others:
            ticket = request.result() if request.done() else None
            if isinstance(ticket, Ticket) and not ticket.released:
                d.release(ticket)
        await asyncio.sleep(0)
    granted = listing.done() and isinstance(listing.result(), Ticket)
    still_waiting = sum(not request.done() for request in others)
    for request in others:
        request.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    return granted, still_waiting


def test_a_flows_list_waits_for_its_own_seat_then_goes_before_narrower_requests() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        d = dispatcher(seats=6)  # global-default's own: 2, a list's width; workload-high's: 4
        mine = await d.acquire(GLOBAL_DEFAULT, "lister")
        await d.acquire(GLOBAL_DEFAULT, "a")  # global-default's own seats are full
        listing = asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "lister", width=2))
        gets = [asyncio.create_task(d.acquire(GLOBAL_DEFAULT, f"c{i % 2}")) for i in range(20)]
        await asyncio.sleep(0.01)
        passed_over = not listing.done()  # its flow holds a seat: it may not borrow
        d.release(mine)  # type: ignore[arg-type]
        granted, still_waiting = await seated_beside(d, listing, gets)
        return passed_over, granted, still_waiting

    passed_over, granted, still_waiting = asyncio.run(scenario())
    assert passed_over
    assert granted
    assert still_waiting > 0  # the gets, which may borrow, did not all go before it


def test_a_list_beside_a_backlog_of_narrow_requests_takes_the_level_when_it_frees() -> None:
    async def scenario() -> tuple[bool, int]:
        d = dispatcher(seats=6)  # global-default's own: 2, a list's width; workload-high's: 4
        await d.acquire(WORKLOAD_HIGH, "controller", width=4)
        held = await d.acquire(GLOBAL_DEFAULT, "greedy")
        backlog = [asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "greedy")) for _ in range(10)]
        await asyncio.sleep(0.01)
        listing = asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "polite", width=2))
        await asyncio.sleep(0.01)
        d.release(held)  # type: ignore[arg-type]
        return await seated_beside(d, listing, backlog)

    granted, still_waiting = asyncio.run(scenario())
    # Workload-high's seats are held: the list cannot borrow; it does not fit beside the
    # greedy flow's one seat either, so it holds the level's dispatch: the seat the greedy
    # flow gives back is not dealt again, and the list runs on both.
    assert granted
    assert still_waiting >= 9


def test_a_cancelled_waiter_leaves_its_queue_and_seats_stay_counted_right() -> None:
    async def scenario() -> int:
        d = dispatcher(seats=1)
        held = await d.acquire(GLOBAL_DEFAULT, "a")
        await d.acquire(WORKLOAD_HIGH, "b")
        waiter = asyncio.create_task(d.acquire(GLOBAL_DEFAULT, "c"))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        d.release(held)  # type: ignore[arg-type]
        return d.waiting(GLOBAL_DEFAULT) + d.in_use(GLOBAL_DEFAULT)

    assert asyncio.run(scenario()) == 0


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(
            st.just("acquire"),
            st.sampled_from(["a", "b", "c", "d"]),
            st.sampled_from([GLOBAL_DEFAULT, WORKLOAD_HIGH]),
            st.integers(1, 3),
        ),
        st.tuples(st.sampled_from(["release", "cancel"]), st.integers(0, 40)),
        st.just(("turn",)),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(OPERATIONS)
def test_any_mix_of_requests_releases_and_give_ups_leaves_no_seat_or_backlog_counted(
    operations: list[tuple[object, ...]],
) -> None:
    async def scenario() -> tuple[int, int, bool, bool]:
        d = dispatcher(seats=6, wait=1.0, queue_length=3)  # a wait left behind fails fast
        requests: list[asyncio.Task[Ticket | Refused]] = []
        for operation in operations:
            if operation[0] == "acquire":
                _, flow, level, width = operation
                task = d.acquire(str(level), str(flow), int(str(width)))
                requests.append(asyncio.create_task(task))
            elif operation[0] in {"release", "cancel"} and requests:
                request = requests[int(str(operation[1])) % len(requests)]
                if operation[0] == "cancel":
                    request.cancel()
                elif request.done() and not request.cancelled():
                    ticket = request.result()
                    if isinstance(ticket, Ticket):
                        d.release(ticket)
            await asyncio.sleep(0)
        for _ in range(200):  # every seat given back as soon as it is dealt, until none wait
            for request in requests:
                ticket = request.result() if request.done() and not request.cancelled() else None
                if isinstance(ticket, Ticket):
                    d.release(ticket)
            if all(request.done() for request in requests):
                break
            await asyncio.sleep(0)
        drained = all(request.done() for request in requests)
        for request in requests:
            request.cancel()
        await asyncio.gather(*requests, return_exceptions=True)
        levels = (GLOBAL_DEFAULT, WORKLOAD_HIGH)
        light = sum(d.light(level) for level in levels)
        # Nothing counted stays behind: light flows may borrow again, at once.
        for flow in ("a", "b", "c", "d"):
            assert isinstance(await d.acquire(GLOBAL_DEFAULT, flow), Ticket)
        borrowed = isinstance(await d.acquire(GLOBAL_DEFAULT, "e"), Ticket)
        return (
            sum(d.in_use(level) for level in levels),
            sum(d.waiting(level) for level in levels),
            drained,
            borrowed,
            light,
        )

    in_use, waiting, drained, borrowed, light = asyncio.run(scenario())
    assert drained  # every request was seated or refused once seats came back
    assert waiting == 0
    assert light == 0  # no light request is counted in service after all gave their seats back
    assert in_use == 5  # the last check: two on global-default's own seats, three borrowed
    assert borrowed


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def refuse(tracker: RetryAfter, clock: Clock, second: float, times: int) -> list[int]:
    clock.now = second
    return [tracker.dropped(GLOBAL_DEFAULT) for _ in range(times)]


def test_retry_after_starts_at_a_second_and_doubles_while_refusals_keep_coming() -> None:
    clock = Clock()
    tracker = RetryAfter(clock)
    assert tracker.seconds(GLOBAL_DEFAULT) == 1
    assert refuse(tracker, clock, 100, 5) == [1] * 5  # judged when the next second starts
    assert refuse(tracker, clock, 101, 1) == [2]  # 5 in the last second: at least 3 x 1
    # Doubled at 101, it may not double again before 103, however many are refused.
    assert refuse(tracker, clock, 101.5, 50) == [2] * 50
    assert refuse(tracker, clock, 102, 1) == [2]
    assert refuse(tracker, clock, 103, 1) == [4]  # 51 + 1 in the last 2 s: at least 3 x 2
    assert tracker.seconds(GLOBAL_DEFAULT) == 4
    assert tracker.seconds(WORKLOAD_HIGH) == 1  # each level keeps its own


def test_retry_after_stays_at_32_seconds_under_a_flood() -> None:
    clock = Clock()
    tracker = RetryAfter(clock)
    seen = [refuse(tracker, clock, second, 200)[-1] for second in range(200, 400)]
    assert max(seen) == 32
    assert seen[-1] == 32
    assert sorted(set(seen)) == [1, 2, 4, 8, 16, 32]


def test_retry_after_takes_a_second_off_once_refusals_are_rare() -> None:
    clock = Clock()
    tracker = RetryAfter(clock)
    for second in range(10, 20):
        refuse(tracker, clock, second, 100)
    assert tracker.seconds(GLOBAL_DEFAULT) == 8
    # Long after the flood, a second with a refusal and fewer than one a second before it
    # lowers it by one.
    assert [refuse(tracker, clock, 1000 + 10 * i, 1)[0] for i in range(9)] == [
        7, 6, 5, 4, 3, 2, 1, 1, 1
    ]  # fmt: skip
