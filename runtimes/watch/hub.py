"""The hub: one ordered event stream per process, fanned out to every watcher.

A dispatcher thread tails the event log (`revision > last ORDER BY revision`) whenever a write
commits here (`runtimes.storage.events`), another process nudges (`runtimes.watch.nudge`), or a poll
comes due, and keeps the recent events in a bounded in-memory ring. Revisions commit in order (the
counter row lock), so that read never skips a revision that commits late.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from typing import Protocol

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection

from runtimes.apimachinery.meta import Obj
from runtimes.storage import compaction, events
from runtimes.storage.eventlog import (
    FIELDS,
    HubEvent,
    TooOld,
    closing,
    parse_event,
    read_log,
    run_db,
)
from runtimes.storage.models import Event, StoredObject
from runtimes.storage.store import current_revision
from runtimes.watch import nudge
from runtimes.watch.cache import CachedSnapshot, Entry, Lookup, WatchCache

# Watchers pull rather than being pushed to: each subscription has a cursor (the last revision it
# has seen) and reads `revision > cursor` from the ring, or from the log when it starts behind the
# ring. A cursor makes delivery gapless, duplicate-free and ordered by construction. A watcher
# that has caught up and then falls behind the ring cannot keep up: it is ended with `TooSlow`
# (the API sends an ERROR and the client resumes or re-lists), as kube-apiserver drops watchers
# whose buffers fill. A start point below the compaction floor raises `TooOld` (410 Expired).
#
#     async with hub.subscribe(after, "trainingruntimes.nodus.dev", "demo") as events:
#         async for event in events: ...
#
# Threads use `hub.follow(...)`, which blocks instead of awaiting; `close()` wakes the thread
# blocked in it. In-process users rarely follow by hand: `runtimes.watch.informer` lists, follows
# from the list's revision and re-lists on 410 (the controller reads events only that way).
#
# The hub reads the event log; it does not compact it. Compaction has one owner, the store's
# after-commit hook (`runtimes.storage.compaction`), which runs wherever writes happen, hub or no
# hub.

log = logging.getLogger("nodus.hub")

__all__ = [
    "Hub",
    "HubEvent",
    "Subscription",
    "SyncSubscription",
    "TooOld",
    "TooSlow",
    "follow",
    "get_hub",
    "run_db",
    "shutdown",
    "subscribe",
]

POLL_SECONDS = 1.0
PULL_BATCH = 1_000
# The newest events keep their objects parsed for the watchers delivering them; older ones in
# the ring keep only the stored text (HubEvent.release), parsed again for a watcher catching up.
HOT_EVENTS = 256


class TooSlow(Exception):
    """The watcher fell behind the ring after catching up (or its hub was stopped); it must
    resume from its last revision or re-list."""


class Hub:
    def __init__(self, ring_size: int | None = None, poll_seconds: float = POLL_SECONDS) -> None:
        self.ring_size = ring_size or int(settings.NODUS_HUB_RING)
        self.poll_seconds = poll_seconds
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._revisions: list[int] = []
        self._events: list[HubEvent] = []
        self.last = 0  # the newest revision the hub has read
        self.ring_from = 0  # the ring holds every event in (ring_from, last]
        # Each waiting watch's future, with the loop it belongs to (insertion-ordered; a
        # watch that stops waiting takes its own back at once, however many wait).
        self._waiters: dict[asyncio.Future[bool], tuple[asyncio.AbstractEventLoop, _Cursor]] = {}
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        # Every stored object at `last`, applied under `_lock` with the ring (watch.cache).
        self.cache = WatchCache()
        self.with_cache = bool(settings.NODUS_WATCH_CACHE)
        self._warming = False  # a new cache is being read: commits wait for the pull

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self.last = self.ring_from = closing(current_revision)()
        if self.with_cache:
            closing(self._warm_and_pull)()
        self._thread = threading.Thread(target=self._run, name="nodus-hub", daemon=True)
        self._thread.start()
        # Other processes' commits wake us through the process's nudger; our own commits
        # reach it (and through it the other processes) whether or not a hub runs here.
        nudge.process_nudger().listen(self.wake)
        events.subscribe(self.wake)
        events.subscribe_commits(self.offer)

    def stop(self) -> None:
        events.unsubscribe_commits(self.offer)
        events.unsubscribe(self.wake)
        nudge.process_nudger().unlisten(self.wake)
        self._stop.set()
        self.wake()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            self._wake_waiters()

    def wake(self, revision: int = 0) -> None:
        """Has the dispatcher pull from the log: unless `revision` is one it holds already (a
        commit of this process's, offered at commit), which needs no read at all."""
        if 0 < revision <= self.last:
            return
        self._wake.set()

    def offer(self, row: tuple[int, str, str, str, str, str, str]) -> None:
        """A write this process just committed (its event-log row), applied at once when it is
        the next revision the hub expects: a consistent read that follows it then finds the
        cache caught up instead of waiting for the dispatcher's pull from SQL. Any other
        revision (another thread's commit came first, another process wrote in between, a
        cache being read) is left to the pull, which the commit's `published` wakes."""
        with self._lock:
            if not self._accepts(row[0]):
                return
        event = parse_event(row)
        with self._lock:
            if self._accepts(event.revision):
                self._append([event])

    def _accepts(self, revision: int) -> bool:
        return (
            revision == self.last + 1
            and self.with_cache
            and self.cache.ready
            and not self._warming
            and not self._stop.is_set()
        )

    def _append(self, new: list[HubEvent]) -> None:
        """Adds events that follow `last` to the ring and the cache (under `_lock`); the events
        this pushes below the newest HOT_EVENTS give up their parsed objects."""
        self._revisions += [e.revision for e in new]
        self._events += new
        self.last = new[-1].revision
        if self.with_cache:
            self.cache.apply(new)
        cooled = len(self._events) - HOT_EVENTS
        for event in self._events[max(0, cooled - len(new)) : max(0, cooled)]:
            event.release()
        self._trim()
        self._wake_waiters(new)

    # -- the dispatcher thread -------------------------------------------------------------

    def _run(self) -> None:
        # A plain thread, not an event loop: Django refuses ORM calls inside a running loop.
        try:
            while not self._stop.is_set():
                self._wake.wait(self.poll_seconds)
                self._wake.clear()
                if self._stop.is_set():
                    break
                try:
                    self.pull()
                except Exception:  # the database hiccupped: reconnect and try again
                    log.warning("hub could not read the event log", exc_info=True)
                    close_old_connections()
                    connection.close()
                    time.sleep(0.5)
        finally:
            connection.close()

    def _warm_and_pull(self) -> None:
        self._warm()
        self.pull()

    def _warm(self) -> None:
        """Fills a new cache from every stored row; the pulls that follow bring it to `last`
        (rows newer than an event are kept), and until then it is not `ready`."""
        if not self.with_cache:
            return
        with self._lock:
            self._warming = True
        try:
            fresh = WatchCache()
            fresh.load(
                StoredObject.objects.values_list(
                    "resource", "namespace", "name", "revision", "body"
                ).iterator(chunk_size=2_000)
            )
            with self._lock:
                self.cache = fresh
        finally:
            with self._lock:
                self._warming = False

    def pull(self) -> None:
        """Reads every committed event after `last` into the ring and wakes the watchers."""
        seen = self.last  # before the store's revision: a commit offered meanwhile is below it
        current = current_revision()
        if current < seen:
            self._reset(current)  # the store was recreated (tests); start over from it
            self._warm()
            current = current_revision()
        while current > self.last:
            after = self.last
            rows = list(
                Event.objects.filter(revision__gt=after)
                .order_by("revision")
                .values_list(*FIELDS)[:PULL_BATCH]
            )
            if not rows:
                # Compacted past us while idle: nothing to replay, the ring restarts here, and
                # the cache, which missed those events, is read again.
                self._warm()
                with self._lock:
                    self.last = self.ring_from = current
                    self._revisions.clear()
                    self._events.clear()
                current = current_revision()  # the rows just read may be newer: catch up
                continue
            new = [parse_event(r) for r in rows]
            # The floor is read after the rows (compaction raises it before deleting), so a
            # compaction racing this read is seen here rather than leaving a silent hole.
            if new[0].revision != after + 1 and compaction.floor() > after + 1:
                # Compaction removed events we never read: the ring restarts after the gap, so
                # nobody is served a stream with a hole in it (they get TooOld/TooSlow).
                self._warm()
                current = max(current, current_revision())
                with self._lock:
                    self._revisions.clear()
                    self._events.clear()
                    self.ring_from = new[0].revision - 1
            with self._lock:
                # Commits offered while these were read are in already.
                new = [e for e in new if e.revision > self.last]
                if new:
                    self._append(new)
        with self._lock:
            if self.with_cache and not self.cache.ready:
                self.cache.caught_up(self.last)
                self._wake_waiters()

    def _trim(self) -> None:
        excess = len(self._events) - self.ring_size
        if excess > self.ring_size // 4:  # trim in steps: list deletes are O(n)
            self.ring_from = self._revisions[excess - 1]
            del self._revisions[:excess]
            del self._events[:excess]
            # What catching-up watchers parsed again below the hot events goes too.
            for event in self._events[: max(0, len(self._events) - HOT_EVENTS)]:
                event.release()

    def _reset(self, current: int) -> None:
        with self._lock:
            self._revisions.clear()
            self._events.clear()
            self.last = self.ring_from = current
            self._wake_waiters()

    def _wake_waiters(self, new: list[HubEvent] | None = None) -> None:
        """Wakes the waiting watches (under `_lock`). Given the events just appended, only the
        watches some of them are for: the others stay asleep with their cursor moved past them
        (a thousand informers on one label are not woken by every other object's change).
        Whether an event is for a watch is worked out once per distinct interest."""
        self._changed.notify_all()
        waiters, self._waiters = self._waiters, {}
        # One hand-over per event loop, not per watch: each `call_soon_threadsafe` writes a
        # byte to the loop's wake-up pipe, a system call made here under the hub's lock, and
        # with a thousand watches waiting that was a thousand of them for every event.
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}
        wanted: dict[Interest, bool] = {}
        for future, (loop, cursor) in waiters.items():
            interest = cursor.interest
            # Only a cursor the new events follow without a gap may skip them.
            if new and interest is not None and self.ring_from <= cursor.cursor < new[0].revision:
                hit = wanted.get(interest)
                if hit is None:
                    hit = wanted[interest] = _wants_any(interest, new)
                if not hit:
                    cursor.cursor = max(cursor.cursor, new[-1].revision)
                    self._waiters[future] = (loop, cursor)
                    continue
            by_loop.setdefault(loop, []).append(future)
        for loop, futures in by_loop.items():
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve_all, futures)

    # -- reading ---------------------------------------------------------------------------

    def cached(
        self,
        resource: str,
        namespace: str | None,
        revision: int | None = None,
        lookups: tuple[Lookup, ...] = (),
    ) -> CachedSnapshot | None:
        """The kind's objects at `revision` (None: the cache's latest) from memory, or None
        when the cache can't answer: off, not warm yet, `revision` ahead of it or before the
        ring (the caller reads SQL). `lookups`: what every object needed meets (an index
        narrows the snapshot to the objects the narrowest one names)."""
        with self._lock:
            if not (self.with_cache and self.cache.ready):
                return None
            at = self.last if revision is None else revision
            if at > self.last or at < self.ring_from:
                return None
            since = self._events[bisect.bisect_right(self._revisions, at) :]
            return self.cache.snapshot(resource, namespace, at, since, lookups)

    def latest_entry(self, resource: str, key: tuple[str, str]) -> tuple[Entry | None, int] | None:
        """One object's latest entry (None: not held) and the cache's revision, or None when
        the cache can't answer (off, not warm yet)."""
        with self._lock:
            if not (self.with_cache and self.cache.ready):
                return None
            return self.cache.entry(resource, key), self.last

    def wait_for(self, revision: int, timeout: float) -> bool:
        """Blocks until the cache has applied `revision` (True) or `timeout` passes (False)."""
        with self._lock:
            if self.cache.ready and self.last >= revision:
                return True
        self.wake()
        with self._changed:
            return (
                self._changed.wait_for(
                    lambda: self._stop.is_set() or (self.cache.ready and self.last >= revision),
                    timeout,
                )
                and not self._stop.is_set()
            )

    def from_ring(self, cursor: int) -> tuple[list[HubEvent], int] | None:
        """Events after `cursor` held in memory, or None when the ring no longer reaches back."""
        with self._lock:
            if cursor < self.ring_from:
                return None
            index = bisect.bisect_right(self._revisions, cursor)
            return self._events[index:], max(cursor, self.last)

    def add_waiter(self, cursor: _Cursor, future: asyncio.Future[bool]) -> bool:
        """Registers `future` to be resolved once events `cursor` wants arrive; False if some
        may have already."""
        with self._lock:
            if self._stop.is_set():
                raise TooSlow  # this hub is gone: resume on the next one
            if self.last > cursor.cursor:
                return False
            self._waiters[future] = (future.get_loop(), cursor)
            return True

    def discard_waiter(self, future: asyncio.Future[bool]) -> None:
        """Forgets a waiter that stopped waiting (timed out, cancelled): a quiet hub would
        otherwise keep one future per watch per timeout until the next event."""
        with self._lock:
            self._waiters.pop(future, None)

    def wait_sync(
        self, cursor: int, timeout: float, interrupted: Callable[[], bool] = lambda: False
    ) -> None:
        with self._changed:
            self._changed.wait_for(
                lambda: self.last > cursor or self._stop.is_set() or interrupted(), timeout
            )
            if self._stop.is_set():
                raise TooSlow

    def interrupt_sync(self) -> None:
        """Wakes every thread in `wait_sync`, so each can look at its `interrupted` again."""
        with self._changed:
            self._changed.notify_all()

    def subscribe(
        self,
        after: int,
        resource: str | None = None,
        namespace: str | None = None,
        predicate: Callable[[HubEvent], bool] | None = None,
        selection: Selects | None = None,
    ) -> Subscription:
        """A subscription (usable with `async with`) on this hub."""
        return Subscription(self, after, resource, namespace, predicate, selection)

    def follow(
        self, after: int, resource: str | None = None, namespace: str | None = None
    ) -> SyncSubscription:
        return SyncSubscription(self, after, resource, namespace)


def _resolve_all(futures: list[asyncio.Future[bool]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(True)  # woken: there may be something new


def _wants_any(interest: Interest, new: list[HubEvent]) -> bool:
    """Whether some of `new` is for `interest`; True when that can't be told (a selection that
    fails on an object): the watch's own filtering meets it then, on its own stream, not here
    under the hub's lock, in a commit's hook or the dispatcher."""
    try:
        return any(interest.wants(event) for event in new)
    except Exception:  # a failure of one watch's selection is that watch's
        return True


def _time_up(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(False)


class Selects(Protocol, Hashable):
    """A watch's selection (api.listoptions.Selection): hashable, equal when it selects alike."""

    def matches(self, obj: Obj | None) -> bool: ...


class Interest:
    """The events a watch is for: of a kind, in a namespace, and whose object its selection
    matches now or did before the change (typed() turns that into ADDED, MODIFIED or DELETED).
    Equal interests are one object (`interest`), so the hub groups its waiters by identity."""

    __slots__ = ("__weakref__", "namespace", "resource", "selection")

    def __init__(self, resource: str | None, namespace: str | None, selection: Selects | None):
        self.resource = resource
        self.namespace = namespace
        self.selection = selection

    def wants(self, event: HubEvent) -> bool:
        if self.resource is not None and event.resource != self.resource:
            return False
        if self.namespace is not None and event.namespace != self.namespace:
            return False
        if self.selection is None:
            return True
        return self.selection.matches(event.object) or self.selection.matches(event.previous)


# Equal interests share one object while some watch holds it: a herd of a thousand informers
# on one selector is one interest, whose verdict on an event is worked out once.
_interests: weakref.WeakValueDictionary[tuple[object, ...], Interest] = (
    weakref.WeakValueDictionary()
)
_interests_lock = threading.Lock()


def interest(resource: str | None, namespace: str | None, selection: Selects | None) -> Interest:
    key = (resource, namespace, selection)
    with _interests_lock:
        found = _interests.get(key)
        if found is None:
            found = _interests[key] = Interest(resource, namespace, selection)
        return found


class _Cursor:
    """What both subscription flavours share: the cursor and the filtering."""

    def __init__(
        self,
        hub: Hub,
        after: int,
        resource: str | None,
        namespace: str | None,
        predicate: Callable[[HubEvent], bool] | None = None,
        selection: Selects | None = None,
    ) -> None:
        self.hub = hub
        self.cursor = after
        self.resource = resource
        self.namespace = namespace
        self.predicate = predicate
        # Its kind and namespace. The selection is the stream's to apply (watchstream.typed,
        # which tells ADDED, MODIFIED and DELETED apart), not matched here a second time.
        self._scope = interest(resource, namespace, None)
        # What the hub wakes it for; None (a predicate it cannot group by): every event.
        self.interest = None if predicate else interest(resource, namespace, selection)
        self.live = False  # caught up with the ring at least once

    def _wanted(self, event: HubEvent) -> bool:
        if not self._scope.wants(event):
            return False
        return self.predicate is None or self.predicate(event)

    def _take(self, batch: list[HubEvent], reached: int) -> list[HubEvent]:
        wanted = [e for e in batch if e.revision > self.cursor and self._wanted(e)]
        self.cursor = max(self.cursor, reached)
        return wanted

    def _from_ring(self) -> list[HubEvent] | None:
        ring = self.hub.from_ring(self.cursor)
        if ring is None:
            if self.live:
                raise TooSlow
            return None
        self.live = True
        return self._take(*ring)


class Subscription(_Cursor):
    # Whether the last `next_batch` gave the event loop to others while it waited: a caller
    # that got its batch without waiting yields the loop itself before writing more.
    waited = False

    async def next_batch(self, timeout: float | None = None) -> list[HubEvent]:
        """The next events after the cursor; [] when `timeout` passes with nothing new."""
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        self.waited = False
        while True:
            batch = self._from_ring()
            if batch is None:
                upto = self.hub.ring_from
                batch = self._take(
                    *await run_db(read_log, self.cursor, upto, self.resource, self.namespace)
                )
            if batch:
                return batch
            if self.cursor < self.hub.ring_from:
                continue  # still catching up from the log
            loop = asyncio.get_running_loop()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return []
            future: asyncio.Future[bool] = loop.create_future()
            if self.hub.add_waiter(self, future):
                # A timer on the future itself (True: the hub woke it; False: time is up),
                # not `asyncio.wait_for`'s timeout scope: a thousand watches wait on every event.
                timer = None if remaining is None else loop.call_later(remaining, _time_up, future)
                self.waited = True
                try:
                    woken = await future
                except asyncio.CancelledError:
                    self.hub.discard_waiter(future)
                    raise
                finally:
                    if timer is not None:
                        timer.cancel()
                if not woken:
                    self.hub.discard_waiter(future)
                    return []

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None  # nothing is held: the hub keeps no per-watcher state

    def __aiter__(self) -> AsyncIterator[HubEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[HubEvent]:
        while True:
            for event in await self.next_batch():
                yield event


class SyncSubscription(_Cursor):
    """The blocking flavour, for threads (the informer's)."""

    closed = False

    def close(self) -> None:
        """Ends a `next_batch` blocked in another thread at once (it returns []); for stopping."""
        self.closed = True
        self.hub.interrupt_sync()

    def next_batch(self, timeout: float = POLL_SECONDS) -> list[HubEvent]:
        """The next events after the cursor; [] when `timeout` passes with nothing new or the
        subscription is closed."""
        deadline = time.monotonic() + timeout
        while not self.closed:
            batch = self._from_ring()
            if batch is None:
                batch = self._take(
                    *read_log(self.cursor, self.hub.ring_from, self.resource, self.namespace)
                )
            if batch:
                return batch
            if self.cursor < self.hub.ring_from:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            self.hub.wait_sync(self.cursor, remaining, lambda: self.closed)
        return []


_hub: Hub | None = None
_hub_lock = threading.Lock()


def get_hub() -> Hub:
    """The process's hub, started on first use."""
    global _hub
    with _hub_lock:
        if _hub is None:
            hub = Hub()
            hub.start()
            _hub = hub
        return _hub


def shutdown() -> None:
    """Stops the process's hub (tests; a new one starts on next use)."""
    global _hub
    with _hub_lock:
        hub, _hub = _hub, None
    if hub is not None:
        hub.stop()


def follow(
    after: int, resource: str | None = None, namespace: str | None = None
) -> SyncSubscription:
    """A blocking subscription on the process's hub (started on first use), for threads."""
    return get_hub().follow(after, resource, namespace)


@asynccontextmanager
async def subscribe(
    after: int,
    resource: str | None = None,
    namespace: str | None = None,
    predicate: Callable[[HubEvent], bool] | None = None,
    selection: Selects | None = None,
) -> AsyncIterator[Subscription]:
    """`async with hub.subscribe(after, key, ns) as events:` on the process's hub; with a
    `selection`, only the events whose object it matches, now or before the change."""
    hub = await sync_to_async(get_hub, thread_sensitive=False)()
    yield Subscription(hub, after, resource, namespace, predicate, selection)
