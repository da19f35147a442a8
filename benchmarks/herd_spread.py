"""A herd spread over several client processes, so that the client is not what bounds it.

`Spread(target, n)` forks n processes before the side's event loop starts (the target has no
connection open yet). Member i of a herd runs in process i mod n, on that process's own event
loop, where its watch stays open until the herd is closed. The parent asks over a pipe: open a
herd (its start time passed along, so every member's time to watching counts from one instant),
wait until every open watcher has a revision, report, close. Reports come back as `Watcher`s
carrying what their stream brought, so `herd_loads.delivery` reads them as it reads local ones.
Times are `time.perf_counter()`, the system's monotonic clock on Linux, comparable across the
processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from benchmarks.herd_http import Counters
from benchmarks.herd_loads import Herd, Target, Watcher, herd, settle_at

Command = tuple[Any, ...]


@dataclass
class Seen:
    """One member as its process last saw it."""

    index: int
    watching: float | None
    receipts: dict[int, float]
    error: str
    ending: str
    open: bool
    streamed: int
    counters: Counters = field(default_factory=Counters)


class Remote(Watcher):
    """A member that runs in another process, as that process last reported it."""

    def __init__(self, target: Target, seen: Seen) -> None:
        super().__init__(target)
        self.update(seen)

    def update(self, seen: Seen) -> None:
        self.index, self.watching, self.receipts = seen.index, seen.watching, seen.receipts
        self.error, self._ending, self._open = seen.error, seen.ending, seen.open
        self.streamed, self.counters = seen.streamed, seen.counters

    @property
    def open(self) -> bool:
        return self._open

    def ending(self) -> str:
        return self._ending

    def close(self) -> None:
        pass  # its process closes it (`Spread.close`)


def _seen(i: int, w: Watcher) -> Seen:
    return Seen(i, w.watching, w.receipts, w.error, w.ending(), w.open, w.streamed, w.counters)


async def _serve(target: Target, pipe: Connection, share: int, of: int) -> None:
    loop = asyncio.get_running_loop()
    members: list[tuple[int, Watcher]] = []
    while True:
        command: Command = await loop.run_in_executor(None, pipe.recv)
        verb = command[0]
        if verb == "herd":
            _verb, count, deadline, probe_only, began = command
            mine = list(range(share, count, of))
            opened = await herd(target, count, deadline, probe_only, members=mine, began=began)
            members = list(zip(mine, opened.watchers, strict=True))
        elif verb == "settle":
            _verb, last, seconds = command
            if last is not None:
                await settle_at((w for _i, w in members), last, seconds)
        elif verb == "close":
            for _i, w in members:
                w.close()
            members = []
        elif verb == "stop":
            pipe.send([])
            return
        pipe.send([_seen(i, w) for i, w in members])


def _child(target: Target, pipe: Connection, share: int, of: int) -> None:
    asyncio.run(_serve(target, pipe, share, of))


class Spread:
    """n client processes for one target's herds; `stop()` ends them."""

    def __init__(self, target: Target, processes: int) -> None:
        self.target = target
        context = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.processes: list[multiprocessing.process.BaseProcess] = []
        for k in range(processes):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=_child, args=(target, theirs, k, processes), daemon=True
            )
            process.start()
            theirs.close()
            self.pipes.append(mine)
            self.processes.append(process)
        self.members: dict[int, Remote] = {}

    async def _ask(self, *command: Any) -> list[Seen]:
        loop = asyncio.get_running_loop()
        for pipe in self.pipes:
            pipe.send(command)
        answers = await asyncio.gather(
            *(loop.run_in_executor(None, pipe.recv) for pipe in self.pipes)
        )
        return [seen for answer in answers for seen in answer]

    def _update(self, seen: list[Seen]) -> None:
        for one in seen:
            self.members[one.index].update(one)

    async def herd(self, count: int, deadline: float, probe_only: bool) -> Herd:
        began = time.perf_counter()
        seen = await self._ask("herd", count, deadline, probe_only, began)
        self.members = {one.index: Remote(self.target, one) for one in seen}
        watchers: list[Watcher] = [self.members[i] for i in sorted(self.members)]
        counters = Counters()
        for w in watchers:
            counters.add(w.counters)
        return Herd(watchers, counters, time.perf_counter() - began)

    async def settle(self, last: int | None, seconds: float) -> None:
        """Waits (at most `seconds`) until every open member has revision `last`; refreshes."""
        self._update(await self._ask("settle", last, seconds))

    async def close(self) -> None:
        await self._ask("close")
        self.members = {}

    def stop(self) -> None:
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send(("stop",))
        for process in self.processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
