"""An informer for in-process users, as client-go's: list, watch from the list's revision, re-list
on 410.

    informer = Informer(kind, Handlers(on_add=..., on_update=..., on_delete=...))
    informer.run(stop)  # on a thread of its own; `close()` ends it at once
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection

from runtimes.apimachinery.meta import Obj
from runtimes.storage import store
from runtimes.storage.kinds import StoredKind
from runtimes.watch.hub import (
    POLL_SECONDS,
    Hub,
    HubEvent,
    SyncSubscription,
    TooOld,
    TooSlow,
    follow,
    get_hub,
)

# `list` reads every object of the kind and the revision they are current at, from the watch
# cache (`watch.cache`) or in one SQL statement (`store.list_objects`); `watch` follows the
# process's hub from that revision, so nothing is missed and nothing repeated. The informer keeps
# the last state of each object (its cache) and turns events into handler calls: on_add for an
# object it did not know, on_update(old, new) for one it did, on_delete(last state) when one goes.
#
# When the hub says the revision followed from has been compacted away (`TooOld`, 410 Expired),
# the informer lists again and brings its handlers in line with the new list, as client-go's
# Replace does: on_add for objects it did not know, on_update for every object it knew (changed
# or not), and on_delete, with the last state it knew, for objects no longer there: their DELETED
# events may be among those compacted. A watch cut off for falling behind the hub's ring
# (`TooSlow`) resumes from its revision, which re-lists only if that too has been compacted.
#
# The cache keeps each object as its JSON text (the log's, shared with the hub's ring), parsed
# again when a handler or `get` needs it: parsed, a 4 KB runtime took about 22 KB, and the
# embedded controller's informers held every object of the store (10,000 runtimes: 373 MB of
# RSS after their creates, 155 MB without the controller).
#
# Every `resync_seconds` the handlers get on_update(obj, obj) for every cached object, from memory:
# level-triggered users look at everything again now and then. An on_update whose old and new
# carry the same resourceVersion is therefore a resync (or a re-list of an unchanged object).
#
# The informer never reads the event-log tables (the hub does, checking the compaction floor after
# the rows), and never compacts. Handlers run on the informer's thread: they should be quick (add
# a key to a work queue) and must not change the objects they are handed, which the hub shares
# with every other watcher.

log = logging.getLogger("nodus.informer")

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped kinds


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


def _ignore(*_objects: Obj) -> None:
    return None


@dataclass(frozen=True)
class Handlers:
    """What the informer calls for each change; any of the three may be left out."""

    on_add: Callable[[Obj], None] = _ignore
    on_update: Callable[[Obj, Obj], None] = _ignore
    on_delete: Callable[[Obj], None] = _ignore

    @classmethod
    def on_change(cls, changed: Callable[[Key], None]) -> Handlers:
        """One handler for every add, update, resync and delete: the object's key."""
        return cls(
            on_add=lambda obj: changed(key_of(obj)),
            on_update=lambda _old, new: changed(key_of(new)),
            on_delete=lambda obj: changed(key_of(obj)),
        )


class Informer:
    def __init__(
        self,
        kind: StoredKind,
        handlers: Handlers,
        *,
        namespace: str | None = None,
        resync_seconds: float | None = None,
        hub: Hub | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self.handlers = handlers
        self.namespace = namespace
        self.resync_seconds = resync_seconds  # None: never
        self.clock = clock
        self._hub = hub  # None: the process's hub, started on first use
        self._cache: dict[Key, str] = {}  # each object's JSON text
        self._watch: SyncSubscription | None = None
        self._next_resync = 0.0
        self._closed = False

    # -- list and watch ----------------------------------------------------------------------

    def list(self) -> tuple[builtins.list[Obj], int]:
        """Every object of the kind (in the namespace) and the revision they are current at:
        from the hub's watch cache when it is on and warm, else from SQL."""
        hub = self._hub or get_hub()
        cached = hub.cached(self.kind.key, self.namespace)
        if cached is not None:
            return cached.bodies(cached.keys), cached.revision
        return store.list_objects(self.kind, self.namespace)

    def watch(self, after: int) -> SyncSubscription:
        """The kind's events after revision `after`, from the hub."""
        if self._hub is not None:
            return self._hub.follow(after, self.kind.key, self.namespace)
        return follow(after, self.kind.key, self.namespace)

    @property
    def has_synced(self) -> bool:
        """Whether the first list has been handed to the handlers."""
        return self._watch is not None

    @property
    def last_sync_revision(self) -> int:
        """The revision the cache is current at (0 before the first list)."""
        return self._watch.cursor if self._watch is not None else 0

    def get(self, key: Key) -> Obj | None:
        """The cached object, as of `last_sync_revision` (a copy of its own)."""
        text = self._cache.get(key)
        return None if text is None else store.loads(text)

    def keys(self) -> builtins.list[Key]:
        return sorted(self._cache)

    # -- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event, poll_seconds: float = POLL_SECONDS) -> None:
        """Lists, then follows the hub until `stop` is set or `close()` is called.

        `poll_seconds` bounds each wait (so `stop` is looked at) and spaces out retries while the
        database is away; a failed list is retried, a failed read resumes from the revision
        reached.
        """
        try:
            while not stop.is_set() and not self._closed:
                try:
                    self.step(poll_seconds)
                except Exception:
                    log.exception("informer %s: reading failed; retrying", self.kind.key)
                    connection.close()  # a broken connection is replaced on the next query
                    stop.wait(poll_seconds)
        finally:
            connection.close()

    def close(self) -> None:
        """Ends `run` (from any thread), waking it if it is waiting for events."""
        self._closed = True
        watch = self._watch
        if watch is not None:
            watch.close()

    def step(self, timeout: float = 0.0) -> None:
        """One round: list if there is no watch, else hand the next events (waiting up to
        `timeout` for them) to the handlers; then resync if due."""
        if self._watch is None:
            self.relist()
        else:
            self._follow(self._watch, timeout)
        if self.resync_seconds is not None and self.clock() >= self._next_resync:
            self.resync()

    def _follow(self, watch: SyncSubscription, timeout: float) -> None:
        if self.resync_seconds is not None:
            timeout = max(0.0, min(timeout, self._next_resync - self.clock()))
        try:
            batch = watch.next_batch(timeout)
        except TooOld as exc:
            log.warning(
                "informer %s: revision %s has been compacted (the oldest is %s); re-listing",
                self.kind.key,
                exc.revision,
                exc.oldest,
            )
            self.relist()
            return
        except TooSlow:
            # Fell behind the hub's ring (or the hub stopped): resume from where we are. The
            # new watch catches up from the log, and answers TooOld if that has been compacted.
            self._use(self.watch(watch.cursor))
            return
        for event in batch:
            self._apply(event)

    def relist(self) -> None:
        """Lists afresh, tells the handlers what changed since the cache, and watches from the
        list's revision."""
        objects, revision = self.list()
        known, self._cache = self._cache, {}
        for obj in objects:
            key = key_of(obj)
            self._cache[key] = store.dumps(obj)
            old = known.pop(key, None)
            if old is None:
                self._call(self.handlers.on_add, obj)
            else:
                self._call(self.handlers.on_update, store.loads(old), obj)
        for gone in known.values():  # deleted while we were not watching
            self._call(self.handlers.on_delete, store.loads(gone))
        self._use(self.watch(revision))
        self._schedule_resync()

    def resync(self) -> None:
        """Hands every cached object to on_update(obj, obj)."""
        for text in list(self._cache.values()):
            obj = store.loads(text)
            self._call(self.handlers.on_update, obj, obj)
        self._schedule_resync()

    def _schedule_resync(self) -> None:
        if self.resync_seconds is not None:
            self._next_resync = self.clock() + self.resync_seconds

    def _use(self, watch: SyncSubscription) -> None:
        self._watch = watch
        if self._closed:  # close() ran while this watch was being made
            watch.close()

    def _apply(self, event: HubEvent) -> None:
        key = (event.namespace, event.name)
        if event.type == "DELETED":
            self._cache.pop(key, None)
            self._call(self.handlers.on_delete, event.object)
            return
        old = self._cache.get(key)
        self._cache[key] = event.body or store.dumps(event.object)
        if old is None:
            self._call(self.handlers.on_add, event.object)
        else:
            self._call(self.handlers.on_update, store.loads(old), event.object)

    def _call(self, handler: Callable[..., None], *objects: Obj) -> None:
        try:
            handler(*objects)
        except Exception:  # one handler's bug must not stop the stream for the others
            log.exception("informer %s: a handler failed", self.kind.key)
