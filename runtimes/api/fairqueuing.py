"""API Priority and Fairness's queuing: priority levels sharing the process's seats, and within
each, shuffle-sharded queues served fairly across flows.

A request names its level, its flow (who it is from) and its width (the seats it occupies).
It runs at once while its level has seats; otherwise it waits in the shortest queue of its
flow's hand, and a freed seat goes to the queues in turn, so a flow with a hundred requests
waiting cannot make another flow's one request wait behind them. It is refused only when its
queue is full or its wait would pass the bound. Pure asyncio, no Django: the ASGI middleware
(`flowcontrol`) owns classification, answers and metrics.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

# kube's suggested configuration names these levels; `exempt` is never queued or limited.
EXEMPT, WORKLOAD_HIGH, GLOBAL_DEFAULT = "exempt", "workload-high", "global-default"
HANDS_REMEMBERED = 4096  # flows whose hand of queues is kept rather than dealt again


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


@dataclass
class _Waiter:
    width: int
    turn: asyncio.Future[None]


@dataclass
class _LevelState:
    level: Level
    nominal: int
    in_use: int = 0
    queues: list[collections.deque[_Waiter]] = field(default_factory=list)
    next_queue: int = 0  # round robin over the queues

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
        self._hands: collections.OrderedDict[tuple[str, str], list[int]] = collections.OrderedDict()
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
        if not state.waiting() and self._fits(state, width):
            state.in_use += width
            return Ticket(level, width, 0.0)
        queue = self._shortest(state, flow)
        if len(queue) >= state.level.queue_length:
            return Refused(
                "queue-full",
                f"{len(queue)} requests of this flow's queue already wait at priority level "
                f"{level}",
            )
        loop = asyncio.get_running_loop()
        waiter = _Waiter(width, loop.create_future())
        queue.append(waiter)
        started = loop.time()
        if on_queue is not None:
            on_queue(1)
        try:
            await asyncio.wait_for(asyncio.shield(waiter.turn), self.wait_seconds)
        except TimeoutError:
            if waiter.turn.done() and not waiter.turn.cancelled():
                return Ticket(level, width, loop.time() - started)  # granted as it gave up
            waiter.turn.cancel()
            if waiter in queue:
                queue.remove(waiter)
            return Refused(
                "time-out",
                f"it waited {self.wait_seconds:g} s at priority level {level} without a seat",
            )
        except asyncio.CancelledError:
            if waiter.turn.done() and not waiter.turn.cancelled():
                self._give_back(state, width)
            elif waiter in queue:
                queue.remove(waiter)
            raise
        finally:
            if on_queue is not None:
                on_queue(-1)
        return Ticket(level, width, loop.time() - started)

    def release(self, ticket: Ticket) -> None:
        if ticket.released:
            return
        ticket.released = True
        state = self._state.get(ticket.level)
        if state is None:
            self.exempt_in_use -= ticket.width
            return
        self._give_back(state, ticket.width)

    def _give_back(self, state: _LevelState, width: int) -> None:
        state.in_use -= width
        self._dispatch()

    # -- inside ---------------------------------------------------------------------------

    def _used(self) -> int:
        return sum(s.in_use for s in self._state.values())

    def _fits(self, state: _LevelState, width: int) -> bool:
        """Within the level's own seats, or borrowing seats nobody else is waiting for."""
        if state.in_use + width <= state.nominal:
            return True
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
                    state.in_use += waiter.width
                    waiter.turn.set_result(None)
                    progress = True

    def _next(self, state: _LevelState) -> _Waiter | None:
        """The head of the next non-empty queue of `state` (round robin), if its width fits."""
        count = len(state.queues)
        for step in range(count):
            index = (state.next_queue + step) % count
            queue = state.queues[index]
            while queue and queue[0].turn.done():  # gave up or cancelled
                queue.popleft()
            if not queue:
                continue
            if not self._fits(state, queue[0].width):
                return None
            state.next_queue = (index + 1) % count
            return queue.popleft()
        return None

    def _shortest(self, state: _LevelState, flow: str) -> collections.deque[_Waiter]:
        hand = self._hand(state.level, flow)
        return min((state.queues[i] for i in hand), key=len)

    def _hand(self, level: Level, flow: str) -> list[int]:
        """The queues a flow may use: dealt from a hash of the flow (shuffle sharding), so
        two flows rarely share all of theirs."""
        key = (level.name, flow)
        hand = self._hands.get(key)
        if hand is None:
            seed = int.from_bytes(hashlib.sha256(f"{level.name}/{flow}".encode()).digest()[:8])
            size = min(level.hand_size, level.queues)
            hand = random.Random(seed).sample(range(level.queues), size)
            self._hands[key] = hand
            if len(self._hands) > HANDS_REMEMBERED:
                self._hands.popitem(last=False)
        else:
            self._hands.move_to_end(key)
        return hand


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
