"""The event log as the hub reads it: events parsed once, catch-up reads, when an object was
deleted, database calls off the event loop.

`read_log` serves a watcher that starts behind the hub's in-memory ring; it checks the
compaction floor *after* reading, so a compaction racing the read is noticed (`TooOld`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.db import close_old_connections, connection

from runtimes.apimachinery.meta import Obj
from runtimes.storage import compaction
from runtimes.storage.models import Event

LOG_BATCH = 1_000


@dataclass
class HubEvent:
    """One change as the hub holds it: the stored text of the object after it (and before), and
    each parsed while the event is recent.

    Watchers and the cache read the newest events, and read them parsed; the ring keeps
    thousands more for resuming watches and old continue tokens. The hub `release`s an event's
    parsed objects once newer ones have pushed it down the ring (a parsed 4 KB runtime is
    about 22 KB of dicts); `object`/`previous` parse the text again for the first reader that
    asks after that (a watcher catching up), and its parse serves the others until the hub
    releases it again.
    """

    revision: int
    resource: str
    namespace: str
    name: str
    type: str  # ADDED | MODIFIED | DELETED
    # After the write; the last state (with the deletion's revision) for DELETED.
    parsed_object: Obj | None
    parsed_previous: Obj | None  # before the write; None for ADDED (or released)
    body: str = ""  # `object` as stored (JSON text), when read from the log
    prev_body: str = ""  # `previous` as stored
    # What watchers' encoders made of this event, by media type: serialised once, whatever
    # the number of watchers (kube's cachingObject). Filled by the API layer.
    encoded: dict[Any, bytes] = field(default_factory=dict, compare=False, repr=False)
    # What it is to the watches of a few selections (watchstream.typed), by the selection's id
    # beside the selection itself: worked out once for a herd of watches on one selector.
    verdicts: dict[int, tuple[Any, Any]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def object(self) -> Obj:
        obj = self.parsed_object
        if obj is None:
            obj = self.parsed_object = orjson.loads(self.body)
        return obj

    @property
    def previous(self) -> Obj | None:
        before = self.parsed_previous
        if before is None and self.prev_body:
            before = self.parsed_previous = orjson.loads(self.prev_body)
        return before

    def release(self) -> None:
        """Drops the parsed objects that the stored text can give back, and what was worked
        out from them."""
        self.verdicts = {}
        if self.body:
            self.parsed_object = None
        if self.prev_body:
            self.parsed_previous = None


class TooOld(Exception):
    """The start point has been compacted away (410 Expired)."""

    def __init__(self, revision: int, oldest: int) -> None:
        super().__init__(revision, oldest)
        self.revision = revision
        self.oldest = oldest  # the oldest revision one may still start after


def parse_event(row: tuple[int, str, str, str, str, str, str]) -> HubEvent:
    revision, resource, namespace, name, type_, body, prev = row
    return HubEvent(
        revision,
        resource,
        namespace,
        name,
        type_,
        orjson.loads(body),
        orjson.loads(prev) if prev else None,
        body,
        prev or "",
    )


FIELDS = ("revision", "resource", "namespace", "name", "type", "body", "prev_body")


def read_log(
    after: int, upto: int, resource: str | None, namespace: str | None
) -> tuple[list[HubEvent], int]:
    """Events in (after, upto] from the table, oldest first, and the cursor reached."""
    rows = Event.objects.filter(revision__gt=after, revision__lte=upto)
    if resource is not None:
        rows = rows.filter(resource=resource)
    if namespace is not None:
        rows = rows.filter(namespace=namespace)
    batch = list(rows.order_by("revision").values_list(*FIELDS)[:LOG_BATCH])
    # The floor is read after the rows: a compaction that raced us shows up here.
    if compaction.is_expired(after):
        raise TooOld(after, compaction.oldest_resumable())
    reached = batch[-1][0] if len(batch) == LOG_BATCH else upto
    return [parse_event(r) for r in batch], reached


def closing(fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args)
        finally:
            if not connection.in_atomic_block:
                connection.close()

    return run


async def run_db(fn: Callable[..., Any], *args: Any) -> Any:
    """Runs a database call off the event loop, on a thread that does not hold a request's."""
    return await sync_to_async(closing(fn), thread_sensitive=False)(*args)


@dataclass(frozen=True)
class Deletion:
    """When an object went, as far as the event log still remembers it."""

    revision: int
    at: datetime.datetime


def deletion(
    resource: str, namespace: str, name: str, revision: int | None = None
) -> Deletion | None:
    """The deletion that is this object's newest event, or None (it exists, or it was never
    here, or its deletion has been compacted away). With `revision`, that event's row is read
    by its key; without, the object's events are scanned newest first (bounded by the
    compaction window: the log has no index by name)."""
    rows = Event.objects.filter(resource=resource, namespace=namespace, name=name)
    if revision is not None:
        rows = rows.filter(revision=revision)
    newest = rows.order_by("-revision").values_list("revision", "type", "created_at").first()
    if newest is None or newest[1] != "DELETED":
        return None
    return Deletion(int(newest[0]), newest[2])
