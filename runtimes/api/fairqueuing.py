"""API Priority and Fairness's queuing: priority levels sharing the process's seats, and within
each, shuffle-sharded queues served fairly across flows.

A request names its level, its flow (who it is from) and its width (the seats it occupies).
It runs at once while its level has seats; otherwise it waits in the shortest queue of its
flow's hand, and a freed seat goes to the waiting flow that has been served least (fair
queuing's virtual time), so a flow with a hundred requests waiting cannot make another flow's
one request wait behind them. It is refused only when its queue is full or its wait would pass
the bound. While another flow's light request (its flow had nothing else waiting) is in
service, a request of a flow with a backlog gives way to it at the steps of its work
(`give_way`). Pure asyncio, no Django: the ASGI middleware (`flowcontrol`) owns
classification, answers and metrics.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import hashlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# kube's suggested configuration names these levels; `exempt` is never queued or limited.
EXEMPT, WORKLOAD_HIGH, GLOBAL_DEFAULT = "exempt", "workload-high", "global-default"
FLOWS_REMEMBERED = 4096  # flows whose hand of queues and virtual start are kept
# How long one step of a backlogged flow's request gives way to light requests (`give_way`)
# at most: a bound, so a stream of light requests slows a backlog but never stops it.
GIVE_WAY_SECONDS = 0.05
# And all its steps together, however many queries its view makes.
GIVE_WAY_TOTAL_SECONDS = 0.15
QUEUE_FULL, TIME_OUT = "queue-full", "time-out"  # kube's reasons for a refusal


@dataclass(frozen=True)
class Level:
    """A priority level: its share of the seats, its queues, and how many a flow may use."""

    name: str
    shares: int = 0  # 0: exempt
    queues: int = 128  # kube's suggested levels have 128
    hand_size: int = 6
    queue_length: int = 50

    @property
    def exempt(self) -> bool:
        return self.shares == 0


@dataclass(frozen=True)
class Refused:
    """Why a request was not given seats: its queue was full, or it waited too long."""

    reason: str  # kube's rejection reasons: "queue-full", "time-out"
    detail: str


@dataclass
class Ticket:
    """Seats held by one request; give them back with `Dispatcher.release`."""

    level: str
    width: int
    waited: float
    released: bool = False
    flow: _Flow | None = field(default=None, repr=False, compare=False)
    light: bool = False  # its flow had no other request waiting when it was dealt its seats
    gave_way: float = 0.0  # seconds its steps have given way so far (`Dispatcher.give_way`)


@dataclass(eq=False)
class _Flow:
    """A flow at one level: its hand of queues, and its virtual start (fair queuing's tag, in
    seats): the seats it has been served, counted from when it last kept up with the level."""

    hand: list[int]
    start: float = 0.0
    in_use: int = 0  # the seats its requests hold
    waiting: int = 0  # its requests in the level's queues
    light: int = 0  # its light requests in service (`Ticket.light`)


@dataclass
class _Waiter:
    width: int
    turn: asyncio.Future[None]
    flow: _Flow
    queued: bool = True

    def leave(self) -> None:
        """Counts it out of its flow's waiting requests, once."""
        if self.queued:
            self.queued = False
            self.flow.waiting -= 1

    def withdraw(self, queue: collections.deque[_Waiter]) -> None:
        """Takes it out of `queue` (it gave up, or was cancelled), counted out once."""
        self.leave()
        if self in queue:
            queue.remove(self)


@dataclass
class _LevelState:
    level: Level
    nominal: int
    in_use: int = 0
    queues: list[collections.deque[_Waiter]] = field(default_factory=list)
    virtual: float = 0.0  # the virtual start of the request dispatched last
    next_queue: int = 0  # where the round robin over equal starts resumes
    light: int = 0  # its light requests in service (`Ticket.light`)
    fewer_light: asyncio.Event | None = None  # set, and replaced, when a light one finishes
    # The same for a view's thread (`give_way_on_thread`): set, and replaced, by the loop.
    fewer_light_for_threads: threading.Event = field(default_factory=threading.Event)

    def waiting(self) -> int:
        return sum(len(queue) for queue in self.queues)


class Dispatcher:
    """The seats of one process, shared by priority levels in proportion to their shares; a
    level may borrow seats no other level is waiting for."""

    def __init__(self, levels: tuple[Level, ...], seats: int, wait_seconds: float) -> None:
        limited = [lv for lv in levels if not lv.exempt]
        total_shares = sum(lv.shares for lv in limited) or 1
        self.seats = seats
        self.wait_seconds = wait_seconds
        self.levels = {lv.name: lv for lv in levels}
        self._state = {
            lv.name: _LevelState(
                lv,
                max(1, round(seats * lv.shares / total_shares)),
                queues=[collections.deque() for _ in range(lv.queues)],
            )
            for lv in limited
        }
        self._flows: collections.OrderedDict[tuple[str, str], _Flow] = collections.OrderedDict()
        self.exempt_in_use = 0

    # -- what the middleware and the metrics read -------------------------------------------

    def in_use(self, level: str) -> int:
        state = self._state.get(level)
        return self.exempt_in_use if state is None else state.in_use

    def waiting(self, level: str) -> int:
        state = self._state.get(level)
        return 0 if state is None else state.waiting()

    def nominal(self, level: str) -> int:
        state = self._state.get(level)
        return 0 if state is None else state.nominal

    def light(self, level: str) -> int:
        state = self._state.get(level)
        return 0 if state is None else state.light

    # -- acquiring and releasing ------------------------------------------------------------

    async def acquire(
        self,
        level: str,
        flow: str,
        width: int = 1,
        on_queue: Callable[[int], None] | None = None,
    ) -> Ticket | Refused:
        """Seats for one request of `flow` at `level`: at once, after a fair wait, or refused.
        `on_queue(+1)` and `on_queue(-1)` say when it enters and leaves a queue."""
        state = self._state.get(level)
        if state is None:  # exempt
            self.exempt_in_use += width
            return Ticket(level, width, 0.0)
        width = max(1, min(width, state.nominal))
        member = self._flow(state.level, flow)
        if not state.waiting() and self._fits(state, member, width):
            self._deal(state, member, width)
            return self._ticket(state, member, width, 0.0)
        queue = min((state.queues[i] for i in member.hand), key=len)
        if len(queue) >= state.level.queue_length:
            return Refused(
                QUEUE_FULL,
                f"{len(queue)} requests of this flow's queue already wait at priority level "
                f"{level}",
            )
        loop = asyncio.get_running_loop()
        waiter = _Waiter(width, loop.create_future(), member)
        queue.append(waiter)
        member.waiting += 1
        started = loop.time()
        self._dispatch()  # it may borrow seats another flow's backlog may not
        if on_queue is not None:
            on_queue(1)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.turn), self.wait_seconds)
        except TimeoutError:
            if waiter.turn.done() and not waiter.turn.cancelled():
                # granted as it gave up
                return self._ticket(state, member, width, loop.time() - started)
            waiter.turn.cancel()
            waiter.withdraw(queue)
            return Refused(
                TIME_OUT,
                f"it waited {self.wait_seconds:g} s at priority level {level} without a seat",
            )
        except asyncio.CancelledError:
            if waiter.turn.done() and not waiter.turn.cancelled():
                self._give_back(state, member, width)
            else:
                waiter.withdraw(queue)
            raise
        finally:
            if on_queue is not None:
                on_queue(-1)
        return self._ticket(state, member, width, loop.time() - started)

    async def give_way(self, ticket: Ticket) -> None:
        """Waits, at a step of a request's work (`fairqueuing.give_way`), while light requests
        of other flows at its level are in service, if it is not light itself and its flow
        still has requests waiting; at most GIVE_WAY_SECONDS, within GIVE_WAY_TOTAL_SECONDS
        for the request. (A flow's own light request is no reason: its requests would only
        trade places.)

        Seats bound how many requests run at once; they do not share the time they run in.
        Here every request's steps share one event loop and one interpreter lock, so a polite
        client's list run beside a greedy client's took as long as both, and one that waited
        for the greedy client's list to finish took as long too. Giving way lends the loop to
        the request of a flow that asks for no more than it is served, while the backlogged
        flow's request waits between its steps, holding its seats: kube's goroutines get that
        from the cores the polite request runs on. `benchmarks/run.py fairness` (1,000 lists
        beside another user's 200 in flight against 1,000 idle) measured p50 2.1-2.2x and p99
        2.5-3.1x before, 1.7-1.9x and 2.3-2.6x with it (and, with the steps on the view's
        thread and the cuts docs/benchmarks.md names "Under 2x", 1.4-1.6x and 1.5-2.0x)."""
        state = self._holding_back(ticket)
        if state is None:
            return
        loop = asyncio.get_running_loop()
        started = loop.time()
        until = started + _allowance(ticket)
        while self._gives_way(state, ticket) and loop.time() < until:
            if state.fewer_light is None or state.fewer_light.is_set():
                state.fewer_light = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.fewer_light.wait(), until - loop.time())
        ticket.gave_way += loop.time() - started

    def give_way_on_thread(self, ticket: Ticket) -> None:
        """`give_way` for a step on a view's thread (`fairqueuing.give_way_on_thread`): it
        blocks that thread, without the interpreter lock, and never the loop.

        The steps around a view left its middle to share the lock: a greedy flow's list
        already on its thread when a polite one came ran beside it to its end. Its queries and
        its rendering are steps too. The loop owns the counts; this thread only reads them (a
        stale read costs one more look, after the next light request ends or the bound)."""
        state = self._holding_back(ticket)
        if state is None:
            return
        started = time.monotonic()
        until = started + _allowance(ticket)
        while True:
            # Taken before the look, so a light request that ends after it still wakes us.
            fewer_light = state.fewer_light_for_threads
            left = until - time.monotonic()
            if left <= 0 or not self._gives_way(state, ticket):
                break
            fewer_light.wait(left)
        ticket.gave_way += time.monotonic() - started

    def _holding_back(self, ticket: Ticket) -> _LevelState | None:
        """The level of a request that may have to give way: limited, not light, in service."""
        if ticket.light or ticket.released or ticket.flow is None:
            return None
        return self._state.get(ticket.level)

    @staticmethod
    def _gives_way(state: _LevelState, ticket: Ticket) -> bool:
        """Its flow has a backlog and another flow's light request is in service."""
        member = ticket.flow
        return member is not None and bool(member.waiting) and state.light > member.light

    def release(self, ticket: Ticket) -> None:
        if ticket.released:
            return
        ticket.released = True
        state = self._state.get(ticket.level)
        if state is None:
            self.exempt_in_use -= ticket.width
            return
        assert ticket.flow is not None  # a limited level's tickets name their flow
        if ticket.light:
            state.light -= 1
            ticket.flow.light -= 1
            if state.fewer_light is not None:
                state.fewer_light.set()
            woken, state.fewer_light_for_threads = state.fewer_light_for_threads, threading.Event()
            woken.set()
        self._give_back(state, ticket.flow, ticket.width)

    def _give_back(self, state: _LevelState, member: _Flow, width: int) -> None:
        state.in_use -= width
        member.in_use -= width
        self._dispatch()

    # -- inside ---------------------------------------------------------------------------

    @staticmethod
    def _ticket(state: _LevelState, member: _Flow, width: int, waited: float) -> Ticket:
        light = not member.waiting
        if light:
            state.light += 1
            member.light += 1
        return Ticket(state.level.name, width, waited, flow=member, light=light)

    def _used(self) -> int:
        return sum(s.in_use for s in self._state.values())

    def _fits(self, state: _LevelState, member: _Flow, width: int) -> bool:
        """Within the level's own seats, or borrowing seats nobody else is waiting for."""
        if state.in_use + width <= state.nominal:
            return True
        if not self._may_borrow(state, member, width):
            return False
        others_wait = any(s.waiting() for s in self._state.values() if s is not state)
        return not others_wait and self._used() + width <= self.seats

    def _dispatch(self) -> None:
        """Hands freed seats to waiting requests: each level's queues in turn."""
        progress = True
        while progress:
            progress = False
            for state in self._state.values():
                waiter = self._next(state)
                if waiter is not None:
                    self._deal(state, waiter.flow, waiter.width)
                    waiter.turn.set_result(None)
                    progress = True

    def _next(self, state: _LevelState) -> _Waiter | None:
        """The waiter at the head of a queue of `state` whose flow has the earliest virtual
        start (the first of equals after the queue served last), if its width fits; as in
        kube's fair queuing, one that does not fit holds the level's dispatch until it does,
        so a list is never starved by narrower requests. A request that could only run on
        borrowed seats, of a flow that may not borrow (`_may_borrow`), is passed over: it
        waits for its flow's own requests to finish.

        Fair between flows, where kube's queue set is fair between queues: a flow spreads its
        backlog over its hand of 6 queues, and kube serves each of those as one flow would be
        served, so a greedy client was dealt up to six turns for another's one. A flow's start
        grows by the seats of each request it is dealt and never falls behind the level's
        virtual time, so one that waited for nothing goes next.
        """
        count = len(state.queues)
        best: collections.deque[_Waiter] | None = None
        best_index, best_start = 0, 0.0
        for step in range(count):
            index = (state.next_queue + step) % count
            queue = state.queues[index]
            while queue and queue[0].turn.done():  # gave up or cancelled
                queue.popleft().leave()
            if not queue:
                continue
            head = queue[0]
            if state.in_use + head.width > state.nominal and not self._may_borrow(
                state, head.flow, head.width
            ):
                continue
            start = max(head.flow.start, state.virtual)
            if best is None or start < best_start:
                best, best_index, best_start = queue, index, start
        if best is None or not self._fits(state, best[0].flow, best[0].width):
            return None
        state.next_queue = (best_index + 1) % count
        waiter = best.popleft()
        waiter.leave()
        return waiter

    @staticmethod
    def _may_borrow(state: _LevelState, member: _Flow, width: int) -> bool:
        """Whether a request of `member`, `width` seats wide, may run on seats borrowed from
        other levels, as far as its own flow goes. Borrowing serves more flows at once; it
        does not deepen one flow's service: the flow holds no more than its level's own seats
        with it (a list is as wide as global-default's own seats, so one flow's lists run one
        at a time), and has no other request waiting (its backlog waits for its level's seats).
        A request that fails this is passed over until its flow's own requests finish."""
        return member.in_use + width <= state.nominal and member.waiting <= 1  # counts itself

    @staticmethod
    def _deal(state: _LevelState, member: _Flow, width: int) -> None:
        """Gives `width` seats to `member`: they count as in use, the level's virtual time moves
        to the flow's start, and the flow's start past these seats."""
        state.in_use += width
        member.in_use += width
        state.virtual = max(member.start, state.virtual)
        member.start = state.virtual + width

    def _flow(self, level: Level, flow: str) -> _Flow:
        """A flow's state at a level, with the queues it may use: dealt from a hash of the flow
        (shuffle sharding), so two flows rarely share all of theirs."""
        key = (level.name, flow)
        member = self._flows.get(key)
        if member is None:
            seed = int.from_bytes(hashlib.sha256(f"{level.name}/{flow}".encode()).digest()[:8])
            size = min(level.hand_size, level.queues)
            member = _Flow(random.Random(seed).sample(range(level.queues), size))
            self._flows[key] = member
            if len(self._flows) > FLOWS_REMEMBERED:
                self._flows.popitem(last=False)  # its waiters keep theirs; it starts anew
        else:
            self._flows.move_to_end(key)
        return member


def _allowance(ticket: Ticket) -> float:
    """How long a request's next step may give way: GIVE_WAY_SECONDS, within what is left of
    GIVE_WAY_TOTAL_SECONDS."""
    return max(0.0, min(GIVE_WAY_SECONDS, GIVE_WAY_TOTAL_SECONDS - ticket.gave_way))


# The seats the request running on this task holds, and their dispatcher: set by the middleware
# (`flowcontrol.FlowControl`) for the application it calls, read by `give_way`.
_SERVED: contextvars.ContextVar[tuple[Dispatcher, Ticket] | None] = contextvars.ContextVar(
    "nodus_flow_served", default=None
)


def serving(
    dispatcher: Dispatcher, ticket: Ticket
) -> contextvars.Token[tuple[Dispatcher, Ticket] | None]:
    """Names the seats the request running on this task (and the tasks it starts) holds."""
    return _SERVED.set((dispatcher, ticket))


def served(token: contextvars.Token[tuple[Dispatcher, Ticket] | None]) -> None:
    _SERVED.reset(token)


def give_way_on_thread() -> None:
    """`give_way` for a step of a sync view on its thread (`Dispatcher.give_way_on_thread`)."""
    held = _SERVED.get()
    if held is not None:
        held[0].give_way_on_thread(held[1])


async def give_way() -> None:
    """A step of a request's work that may wait for light requests (`Dispatcher.give_way`):
    nothing for a request outside flow control."""
    held = _SERVED.get()
    if held is not None:
        await held[0].give_way(held[1])


MAX_RETRY_AFTER = 32  # seconds: kube's bound on the Retry-After it suggests


@dataclass
class _Drops:
    retry_after: int = 1
    second: int = 0  # the second being counted, and its drops so far
    count: int = 0
    history: collections.deque[tuple[int, int]] = field(default_factory=collections.deque)
    raised_at: int = 0  # when retry_after last doubled


class RetryAfter:
    """The Retry-After a priority level suggests with each refusal, adjusted as kube-apiserver's
    dropped-requests tracker adjusts it (TCP's congestion control, in seconds): at each new
    second with a refusal, the refusals of the last `retry_after` seconds are counted; at least
    three per second of it doubles it (at most once per `retry_after` seconds, up to 32), fewer
    than one per second takes a second off. So a flood of refused retries spreads itself out,
    while a single refusal still says 1."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.levels: dict[str, _Drops] = {}

    def seconds(self, level: str) -> int:
        """What the level's next refusal says."""
        drops = self.levels.get(level)
        return drops.retry_after if drops else 1

    def dropped(self, level: str) -> int:
        """Counts a refusal at the level; returns the Retry-After it is answered with."""
        drops = self.levels.setdefault(level, _Drops())
        now = int(self.clock())
        if now == drops.second:
            drops.count += 1
            return drops.retry_after
        if drops.count:
            drops.history.append((drops.second, drops.count))
        drops.second, drops.count = now, 1
        keep = min(2 * drops.retry_after, MAX_RETRY_AFTER)
        while drops.history and now - drops.history[0][0] > keep:
            drops.history.popleft()
        recent = sum(n for second, n in drops.history if now - second <= drops.retry_after)
        if now - drops.raised_at >= drops.retry_after and recent >= 3 * drops.retry_after:
            drops.retry_after = min(2 * drops.retry_after, MAX_RETRY_AFTER)
            drops.raised_at = now
        elif recent < drops.retry_after and drops.retry_after > 1:
            drops.retry_after -= 1
        return drops.retry_after
