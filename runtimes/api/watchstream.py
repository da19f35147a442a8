"""One watch, whatever carries it: the plan made before streaming and the events that follow.

`plan_watch` does everything that can fail with an HTTP status (authorization, options,
selectors, the start point) before the first byte goes out. `watch_events` then yields
`{"type", "object"}` dicts: synthetic ADDED events for the initial state, the end-of-initial-
events BOOKMARK, then the hub's changes typed against the selectors (an object entering the
selection is ADDED, one leaving it is DELETED with its previous content and the new revision),
periodic BOOKMARKs, and ERROR to end a watch that can no longer be served. The HTTP view
writes them as JSON lines, the WebSocket consumer as text frames.
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings

from runtimes.api import tables
from runtimes.api.listing import list_page, readable_namespaces, wait_for_revision
from runtimes.api.listoptions import ListOptions, Selection, parse_list_options
from runtimes.apimachinery import errors
from runtimes.apimachinery.durations import human_age
from runtimes.apimachinery.meta import Obj
from runtimes.registry import authorization
from runtimes.registry.resources import ResourceType
from runtimes.storage import compaction, store
from runtimes.watch import hub
from runtimes.watch.cache import Entry
from runtimes.watch.guard import Credential, StreamGuard

# A plan made with the caller's credentials carries a `StreamGuard` (`runtimes.watch.guard`): the
# stream asks it at least once a second, and when the caller's token was revoked, their role
# binding removed or their account deactivated, the watch ends with an ERROR event carrying the
# 401 or 403 Status a new request would get.

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_ADDED = b'{"type":"ADDED","object":'
# kube-apiserver sends a bookmark about once a minute.
BOOKMARK_SECONDS = 60.0
# Without timeoutSeconds kube ends a watch after a random 30-60 minutes, spreading re-watches.
DEFAULT_TIMEOUT = (1800.0, 3600.0)
# Let other requests run after this many initial events in a row (one chunk of the stream).
FAIRNESS_EVERY = 100
# ... and after this many changes in a row (one chunk).
FAIRNESS_EVERY_CHANGE = 16


@dataclass
class WatchPlan:
    rt: ResourceType
    namespace: str | None
    opts: ListOptions
    start_after: int  # stream changes with revisions after this one
    initial: list[Obj | str] = field(default_factory=list)  # objects, or their stored text
    initial_end_bookmark: bool = False
    too_old: errors.ApiError | None = None  # the start was compacted: the stream is one ERROR
    table_version: str | None = None  # "v1" / "v1beta1" for meta.k8s.io Table events
    # "v1" / "v1beta1" for metadata-only events (PartialObjectMetadata), as kube's metadata
    # informers watch.
    metadata_version: str | None = None
    guard: StreamGuard | None = None  # rechecks the caller while the watch runs

    @property
    def timeout(self) -> float:
        if self.opts.timeout_seconds:
            return float(self.opts.timeout_seconds)
        low, high = settings.NODUS_WATCH_TIMEOUT_RANGE
        return random.uniform(float(low), float(high))


def plan_watch(
    rt: ResourceType,
    user: Any,
    access: authorization.Access,
    namespace: str | None,
    query: Any,
    table_version: str | None = None,
    credential: Credential | None = None,
) -> WatchPlan:
    """Checks and resolves a watch request (sync: it reads the database).

    `access` is the declaration of the endpoint the watch came in by (the HTTP collection's or
    the WebSocket consumer's); both go through the same check, at the start and, with the
    caller's `credential`, again whenever access may have been taken away.
    """
    # A watch in a namespace that doesn't exist (yet) is quiet, as in kube: no 404.
    authorization.check(user, access, authorization.WATCH, namespace or "", kind=rt)
    opts = parse_list_options(rt, query, readable_namespaces(rt, user, namespace), watch=True)
    plan = WatchPlan(rt, namespace, opts, 0, table_version=table_version)
    if credential is not None:
        recheck = still_allowed(rt, access, namespace, opts.selection.namespaces)
        plan.guard = StreamGuard(credential, recheck)
    wanted = opts.revision
    send_initial = opts.send_initial_events
    if send_initial is None:
        # Legacy start points: unset/"0" list first, N means "changes after N". kube 1.34+
        # treats the first as a watch-list, ending the initial events with a bookmark.
        send_initial = not wanted
    if send_initial:
        if wanted:
            wait_for_revision(wanted)
        # As stored (JSON text) where nothing needs to look inside: written out as it is.
        page = list_page(
            rt, namespace, ListOptions(selection=opts.selection), stored=table_version is None
        )
        plan.initial, plan.start_after = page.items, page.revision
        plan.initial_end_bookmark = opts.allow_bookmarks
        return plan
    if wanted is None:
        plan.start_after = store.current_revision()
        return plan
    wait_for_revision(wanted)
    plan.start_after = wanted
    if compaction.is_expired(wanted):
        plan.too_old = compaction.too_old(wanted, compaction.oldest_resumable())
    return plan


def still_allowed(
    rt: ResourceType,
    access: authorization.Access,
    namespace: str | None,
    visible: frozenset[str] | None,
) -> Callable[[Any], None]:
    """The recheck of a running watch: the same check as at its start and, for a watch across
    projects, every project it was showing still readable (a lost one is 403 for it)."""

    def recheck(user: Any) -> None:
        authorization.check(user, access, authorization.WATCH, namespace or "", kind=rt)
        if visible is None:
            return
        now = readable_namespaces(rt, user, namespace)
        lost = sorted(visible - set(now)) if now is not None else []
        if lost:
            raise errors.forbidden(user.get_username(), "watch", rt.plural, rt.group, lost[0])

    return recheck


# How many selections' verdicts an event keeps: a herd shares a few; a thousand watches each on
# a selector of its own work theirs out each time rather than grow every event in the ring.
VERDICTS_KEPT = 8


def typed(event: hub.HubEvent, selection: Selection) -> tuple[str, Obj] | None:
    """The watch event a change is for this selection (cache_watcher.go's convertToWatchEvent),
    worked out once per selection object: the watches of a herd pass the same one."""
    verdicts = event.verdicts
    kept = verdicts.get(id(selection))
    if kept is not None and kept[0] is selection:
        verdict: tuple[str, Obj] | None = kept[1]
        return verdict
    verdict = _typed(event, selection)
    if len(verdicts) < VERDICTS_KEPT:
        verdicts[id(selection)] = (selection, verdict)
    return verdict


def _typed(event: hub.HubEvent, selection: Selection) -> tuple[str, Obj] | None:
    if event.type == "DELETED":
        return ("DELETED", event.object) if selection.matches(event.object) else None
    now = selection.matches(event.object)
    before = event.previous is not None and selection.matches(event.previous)
    if now:
        return ("MODIFIED" if before else "ADDED", event.object)
    if before:
        assert event.previous is not None
        gone = copy.deepcopy(event.previous)
        gone["metadata"]["resourceVersion"] = str(event.revision)
        return ("DELETED", gone)
    return None


class Encoder:
    """Turns objects into watch events, as plain objects or one-row Tables."""

    def __init__(self, plan: WatchPlan) -> None:
        self.rt = plan.rt
        self.version = plan.table_version
        self.metadata_version = plan.metadata_version
        self.include = plan.opts.include_object
        self.columns_sent = False

    def _table(self, obj: Obj, include: str) -> Obj:
        table = tables.table(
            self.rt,
            [obj],
            self.version or "v1",
            {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            include,
            with_columns=not self.columns_sent,
        )
        self.columns_sent = True
        return table

    def event(self, type_: str, obj: Obj) -> Obj:
        if self.metadata_version is not None:
            return {"type": type_, "object": tables.partial_metadata(obj, self.metadata_version)}
        if self.version is None:
            return {"type": type_, "object": obj}
        return {"type": type_, "object": self._table(obj, self.include)}

    def initial(self, item: Obj | str | Entry) -> Obj | bytes:
        """An initial ADDED event; `item` may be the object as stored (JSON text) or its watch
        cache entry (whose PartialObjectMetadata is kept for its revision)."""
        if isinstance(item, Entry) and self.metadata_version is not None:
            partial = tables.encoded_partials(self.rt, [item], self.metadata_version)[0]
            return _ADDED + partial + b"}"
        text = item.raw if isinstance(item, Entry) else item
        if not isinstance(text, str):
            return self.event("ADDED", text)
        if self.version is None and self.metadata_version is None:
            return _ADDED + text.encode() + b"}"
        return self.event("ADDED", orjson.loads(text))

    def change(self, type_: str, obj: Obj, event: hub.HubEvent) -> Obj | bytes:
        """The watch event for a change, serialised once per event and rendering for all its
        watchers (kube's cachingObject): plain JSON from the stored text when there is one,
        metadata only, or a one-row Table (per age shown and whether it carries the columns)."""
        if obj is not event.object:  # a DELETED made for this selection alone
            return self.event(type_, obj)
        key = self._rendering_key(type_, obj)
        encoded = event.encoded.get(key)
        if encoded is None:
            if key == type_:
                raw = event.body.encode() if event.body else orjson.dumps(event.object)
                encoded = b'{"type":"' + type_.encode() + b'","object":' + raw + b"}"
            else:
                encoded = orjson.dumps(self.event(type_, obj))
            event.encoded[key] = encoded
        self.columns_sent = self.columns_sent or self.version is not None
        return encoded

    def _rendering_key(self, type_: str, obj: Obj) -> Any:
        if self.metadata_version is not None:
            return (type_, "metadata", self.metadata_version)
        if self.version is None:
            return type_
        age = human_age(obj["metadata"].get("creationTimestamp"))
        return (type_, "table", self.version, self.include, self.columns_sent, age)

    def bookmark(self, revision: int, initial_end: bool = False) -> Obj:
        meta: Obj = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}
        if self.metadata_version is not None:
            return {
                "type": "BOOKMARK",
                "object": tables.partial_metadata(obj, self.metadata_version),
            }
        if self.version is None:
            return {"type": "BOOKMARK", "object": obj}
        # A bookmark has no fields to print; its row's object stays PartialObjectMetadata so
        # the annotation survives whatever includeObject says (as kube-apiserver does).
        list_meta = {"resourceVersion": meta["resourceVersion"]}
        table = tables.table(self.rt, [], self.version, list_meta, "None", not self.columns_sent)
        table["rows"] = [
            {
                "cells": [
                    "" if column["name"] in ("Name", "Age") else None
                    for column in tables.columns(self.rt)
                ],
                "object": tables.partial_metadata(obj, self.version),
            }
        ]
        self.columns_sent = True
        return {"type": "BOOKMARK", "object": table}

    @staticmethod
    def error(error: errors.ApiError) -> Obj:
        return {"type": "ERROR", "object": error.status()}


def too_slow(limit: int) -> errors.ApiError:
    return errors.ApiError(
        "Expired",
        f"watch closed: the watcher fell more than {limit} events behind",
        fix="Watch again from the last resourceVersion you received (client-go and the Python "
        "client do), or list again.",
    )


def encoded(event: Obj | bytes) -> bytes:
    """A watch event as JSON. The events of objects come already encoded (bytes), their
    encoding shared by every watcher of one rendering, and are written out as they are."""
    return event if isinstance(event, bytes) else orjson.dumps(event)


async def watch_events(plan: WatchPlan) -> AsyncIterator[Obj | bytes]:
    """The events of one watch, one at a time (a websocket sends each as its own frame)."""
    async for chunk in watch_chunks(plan):
        for event in chunk:
            yield event


async def watch_chunks(plan: WatchPlan) -> AsyncIterator[list[Obj | bytes]]:
    """The events of one watch, until it times out, the client goes or it cannot go on, in
    chunks of the events at hand: a watcher that fell behind (a burst of writes, a busy loop)
    gets its backlog written as a few chunks, not an event at a time, so the cost of each
    write to the stream is shared by the events in it, and the further behind, the cheaper
    each event. The loop runs other work after each chunk."""
    encoder = Encoder(plan)
    if plan.too_old is not None:
        yield [encoder.error(plan.too_old)]
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + plan.timeout
    for start in range(0, len(plan.initial), FAIRNESS_EVERY):
        yield [encoder.initial(item) for item in plan.initial[start : start + FAIRNESS_EVERY]]
        await asyncio.sleep(0)
    if plan.initial_end_bookmark:
        yield [encoder.bookmark(plan.start_after, initial_end=True)]
    selection = plan.opts.selection
    bookmarks = plan.opts.allow_bookmarks
    every = float(settings.NODUS_WATCH_BOOKMARK_SECONDS)
    next_bookmark = loop.time() + every
    guard = plan.guard
    async with hub.subscribe(
        plan.start_after,
        plan.rt.key,
        plan.namespace if plan.rt.namespaced else None,
        selection=selection,
    ) as changes:
        # Equal selections are one object, the hub's interest's: what an event is to it is
        # worked out by the first watch of a herd and read by the others (typed).
        shared = changes.interest.selection if changes.interest is not None else None
        if isinstance(shared, Selection):
            selection = shared
        while True:
            now = loop.time()
            if now >= deadline:
                if bookmarks:
                    yield [encoder.bookmark(changes.cursor)]
                return
            wait = deadline - now
            if bookmarks:
                wait = min(wait, max(next_bookmark - now, 0.0))
            if guard is not None:
                wait = min(wait, guard.poll)
            try:
                batch = await changes.next_batch(wait)
            except hub.TooOld as exc:
                yield [encoder.error(compaction.too_old(exc.revision, exc.oldest))]
                return
            except hub.TooSlow:
                yield [encoder.error(too_slow(changes.hub.ring_size))]
                return
            chunk: list[Obj | bytes] = []
            for event in batch:
                result = typed(event, selection)
                if result is None:
                    continue
                chunk.append(encoder.change(*result, event))
                if len(chunk) == FAIRNESS_EVERY_CHANGE:
                    # A batch can hold hundreds of this watcher's events (all that came while
                    # the loop was busy): let the loop send some of them to the socket before
                    # writing more, or the connection's buffer only grows.
                    yield chunk
                    chunk = []
                    await asyncio.sleep(0)
            if chunk:
                yield chunk
            if batch and not changes.waited:
                # Daphne's send never suspends, so a watcher with a steady supply of events
                # would otherwise keep the event loop to itself (one that waited for its batch
                # has let the others run already).
                await asyncio.sleep(0)
            if guard is not None and (revoked := await guard.verdict()) is not None:
                yield [encoder.error(revoked)]
                return
            now = loop.time()
            if bookmarks and next_bookmark <= now < deadline:  # at the deadline: the last one
                yield [encoder.bookmark(changes.cursor)]
                next_bookmark = loop.time() + every
