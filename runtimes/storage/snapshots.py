"""Consistent snapshots of one kind: the objects as they were at a given revision.

A paginated list must show every page as of the first page's revision R, even while writers
carry on. The state at R is rebuilt from the current rows plus the event log: a key whose row
was last written at or before R is unchanged since; for any other key the first event after R
carries the object as it was at R (`prev_body`, empty if it did not exist yet). That needs the
events after R, so R must not be older than the compaction floor (else 410 Expired).

Keys are (namespace, name) pairs, ordered in Python so pages are in the same order on SQLite
and PostgreSQL whatever the database collation.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db import connection
from django.db.models.functions import Length

from runtimes.apimachinery.meta import Obj
from runtimes.storage import compaction
from runtimes.storage.models import Event, RevisionCounter, StoredObject

Key = tuple[str, str]
# Above this many keys of one namespace, bodies are read by scanning it rather than by name.
WHOLE_NAMESPACE = 2_000


class Compacted(Exception):
    """The history needed to rebuild the requested revision has been compacted."""


@dataclass
class Snapshot:
    """The keys that existed at `revision`, sorted; bodies are read on demand."""

    resource: str
    namespace: str | None
    revision: int
    keys: list[Key]
    # For keys changed after `revision`: the revision of their first event after it.
    changed: dict[Key, int] = field(default_factory=dict)

    def bodies(self, keys: Iterable[Key]) -> list[Obj]:
        """The objects for `keys` as they were at `revision`, in the order given."""
        return parse_many(self.stored(keys))

    def stored(self, keys: Iterable[Key]) -> list[str]:
        """The same objects as stored (JSON text, unparsed), for writing out as they are."""
        wanted = list(keys)
        found: dict[Key, str] = {}
        for ns, name, revision, body in _rows(self.resource, wanted):
            if revision <= self.revision:
                found[(ns, name)] = body
        missing = [k for k in wanted if k not in found]
        if missing:
            found.update(self._from_events(missing))
        return [found[k] for k in wanted if k in found]

    def _from_events(self, keys: list[Key]) -> dict[Key, str]:
        result: dict[Key, str] = {}
        known = {k: self.changed[k] for k in keys if k in self.changed}
        if known:
            rows = Event.objects.filter(revision__in=list(known.values())).values_list(
                "namespace", "name", "prev_body"
            )
            for ns, name, prev in rows:
                if prev:
                    result[(ns, name)] = prev
        for ns, name in (k for k in keys if k not in known):
            # Changed after we listed the keys: its first event after R is new, but still
            # carries the state at R.
            at_r = (
                Event.objects.filter(
                    resource=self.resource, namespace=ns, name=name, revision__gt=self.revision
                )
                .order_by("revision")
                .values_list("prev_body", flat=True)
                .first()
            )
            if at_r:
                result[(ns, name)] = at_r
        if compaction.is_expired(self.revision):
            raise Compacted
        return result


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pauses the cyclic garbage collector while a request builds thousands of objects.

    Parsing 10,000 stored objects allocates millions of dicts and lists; with the collector
    on, CPython runs full collections over that growing heap again and again, which costs
    three times the parse itself. Parsed JSON (and the Table rows made from it) holds no
    reference cycles, so nothing is lost: it is freed by reference counting as ever.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def parse_many(texts: list[str]) -> list[Obj]:
    with gc_paused():
        return [orjson.loads(text) for text in texts]


def _rows(resource: str, keys: list[Key]) -> list[tuple[str, str, int, str]]:
    rows: list[tuple[str, str, int, str]] = []
    by_namespace: dict[str, list[str]] = {}
    for ns, name in keys:
        by_namespace.setdefault(ns, []).append(name)
    for ns, names in by_namespace.items():
        if len(names) > WHOLE_NAMESPACE:
            # Most of a namespace (a full list): one plain scan beats thousands of bound
            # names, and the rows not asked for are simply not used.
            wanted = set(names)
            rows += [
                row
                for row in StoredObject.objects.filter(resource=resource, namespace=ns).values_list(
                    "namespace", "name", "revision", "body"
                )
                if row[1] in wanted
            ]
            continue
        for start in range(0, len(names), 500):
            rows += list(
                StoredObject.objects.filter(
                    resource=resource, namespace=ns, name__in=names[start : start + 500]
                ).values_list("namespace", "name", "revision", "body")
            )
    return rows


def latest(resource: str, namespace: str | None) -> Snapshot:
    """The keys now and the revision they are current at, read in one statement.

    One statement is one snapshot on SQLite and PostgreSQL alike, so no write can fall between
    reading the counter and reading the keys.
    """
    where = "resource = %s"
    params: list[Any] = [resource]
    if namespace is not None:
        where += " AND namespace = %s"
        params.append(namespace)
    sql = (
        f"SELECT 0, value, '', '' FROM {RevisionCounter._meta.db_table} WHERE id = 1 "  # noqa: S608
        f"UNION ALL SELECT 1, revision, namespace, name FROM {StoredObject._meta.db_table} "
        f"WHERE {where}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    revision = next(int(r[1]) for r in rows if r[0] == 0)
    keys = sorted((ns, name) for tag, _rev, ns, name in rows if tag == 1)
    return Snapshot(resource, namespace, revision, keys)


def at(resource: str, namespace: str | None, revision: int) -> Snapshot:
    """The keys as they were at `revision` (which must not be ahead of the store)."""
    objects = StoredObject.objects.filter(resource=resource)
    events = Event.objects.filter(resource=resource, revision__gt=revision)
    if namespace is not None:
        objects = objects.filter(namespace=namespace)
        events = events.filter(namespace=namespace)
    current = list(objects.values_list("namespace", "name", "revision"))
    first_after: dict[Key, tuple[int, bool]] = {}
    for ns, name, rev, prev_length in (
        events.order_by("revision")
        .annotate(prev_length=Length("prev_body"))
        .values_list("namespace", "name", "revision", "prev_length")
    ):
        first_after.setdefault((ns, name), (rev, not prev_length))
    # Read the floor only after the rows: a compaction that raced us shows up here.
    if compaction.is_expired(revision):
        raise Compacted
    keys = {(ns, name) for ns, name, rev in current if rev <= revision}
    keys |= {k for k, (_rev, absent) in first_after.items() if not absent}
    changed = {k: rev for k, (rev, _absent) in first_after.items()}
    return Snapshot(resource, namespace, revision, sorted(keys), changed)
