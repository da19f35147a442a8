"""The store's revision, read once for many reads: consistent reads on the event loop.

A list or GET without resourceVersion must reflect every write committed before it began
(kube's consistent read, KEP-2340). Served from the watch cache, that needs the store's
current revision, which is a database read. Reads that arrive together share one: `probe()`
reads (current revision, compaction floor) on the view pool for every request waiting when it
starts; a request arriving while a read runs waits for the next one, since a read that began
before the request cannot vouch for writes committed before it. kube-apiserver's cacher
batches its etcd progress requests the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from runtimes.api import viewpool
from runtimes.storage import compaction, store

# While a request runs with a known `StoreState` (`known(state)`), listing and watch planning
# ask that state instead of the database: `current_revision()`, `store_reached()`,
# `is_expired()`, `oldest_resumable()`. What memory can't answer raises `WouldBlock`, and the
# request is served on the pool like any other.
# Without a known state every helper reads the database, as before.


class WouldBlock(Exception):
    """Memory can't answer this without the database: serve the request on the pool."""


@dataclass(frozen=True)
class StoreState:
    current: int  # the store's revision when this request began (or later)
    floor: int | None = None  # the compaction floor then; None: not read


_state: ContextVar[StoreState | None] = ContextVar("nodus_store_state", default=None)


@contextmanager
def known(state: StoreState) -> Iterator[None]:
    token = _state.set(state)
    try:
        yield
    finally:
        _state.reset(token)


def current_revision() -> int:
    state = _state.get()
    return store.current_revision() if state is None else state.current


def store_reached(wanted: int) -> int | None:
    """With a known state: its revision if the store had reached `wanted` (else WouldBlock,
    the pool waits for it); without one, None (the caller reads the database)."""
    state = _state.get()
    if state is None:
        return None
    if wanted > state.current:
        raise WouldBlock
    return state.current


def is_expired(revision: int) -> bool:
    state = _state.get()
    if state is None:
        return compaction.is_expired(revision)
    if state.floor is None:
        raise WouldBlock
    return revision < state.floor - 1


def oldest_resumable() -> int:
    state = _state.get()
    if state is None:
        return compaction.oldest_resumable()
    if state.floor is None:
        raise WouldBlock
    return max(state.floor - 1, 0)


class _Probe:
    """Single-flight reads of the store's state for one event loop."""

    def __init__(self) -> None:
        self.running: asyncio.Task[None] | None = None
        self.next: asyncio.Future[StoreState] | None = None

    async def read(self) -> StoreState:
        future = self.next
        if future is None:
            future = self.next = asyncio.get_running_loop().create_future()
            if self.running is None:
                self._start()
        return await asyncio.shield(future)

    def _start(self) -> None:
        future, self.next = self.next, None
        assert future is not None
        self.running = asyncio.ensure_future(self._run(future))

    async def _run(self, future: asyncio.Future[StoreState]) -> None:
        try:
            current, floor = await viewpool.run(store.revision_and_floor)
            future.set_result(StoreState(current, floor))
        except Exception as error:  # every waiter falls back to the pool and sees it there
            future.set_exception(error)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
        finally:
            self.running = None
            if self.next is not None:
                self._start()


_probes: dict[asyncio.AbstractEventLoop, _Probe] = {}


async def probe() -> StoreState:
    """The store's state, read after this call began (shared with the reads waiting with it)."""
    loop = asyncio.get_running_loop()
    reader = _probes.get(loop)
    if reader is None:
        for gone in [other for other in _probes if other.is_closed()]:
            del _probes[gone]
        reader = _probes[loop] = _Probe()
    return await reader.read()
