"""The watch cache: every stored object in memory, kept current by the hub, read by lists.

kube-apiserver answers lists from its watch cache (the "cacher"), not from etcd; this is ours.
The hub (`runtimes.watch.hub`) reads the event log into its ring; under the same lock it applies
each event here, so the cache is always at the hub's revision and the ring holds every event
after `ring_from`. Together they answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.selectors.fields import field_values
from runtimes.apimachinery.selectors.shards import fnv1a_64
from runtimes.registry.kinds import all_kinds
from runtimes.storage.eventlog import HubEvent

# * the latest state (a list with `resourceVersion=""`, once the cache has seen the store's
#   current revision: KEP-2340's consistent reads from cache; `"0"` and `NotOlderThan` at once);
# * the state at any revision the ring still reaches back to (continue tokens and
#   `resourceVersionMatch=Exact`, KEP-4988): the current entries with every key changed since
#   put back as its first later event found it.
#
# An entry keeps the stored JSON text (lists write it out as it is, never re-serialised), the
# labels and the selectable field values, and nothing parsed beyond that: 10,000 objects of 4 KB
# cost about their text. Keys are (namespace, name), kept sorted per namespace, so pages come in
# the same order as from SQL. Indexes answer a selected list without a scan, as kube's cacher
# keeps indexers: label pairs (`bench=probe`, `tier in (a,b)`), label keys (`tier`), and each
# selectable field's values (`spec.task=SFT`); a list then looks only at the objects its most
# selective requirement names. The cache is generic: the only thing it asks of a kind is the
# names of its selectable fields, from the registry.
#
# Warm-up reads every row from SQL once, when the hub starts; then the hub's pulls keep it
# current. A row newer than an event is never overwritten by that event (the revision guard), so
# the rows read while writers carry on converge on the store after the first pull.

Key = tuple[str, str]
BASE_FIELDS = ("metadata.name", "metadata.namespace")
# What an index can answer, one requirement every match meets: ("label", key, values) a label
# with one of these values; ("label", key, ()) the label present; ("field", path, (value,)) a
# selectable field equal to the value.
Lookup = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Entry:
    """One object as the cache keeps it."""

    revision: int
    raw: str  # the stored JSON text
    labels: Mapping[str, str]
    fields: Mapping[str, str]  # the kind's selectable field values
    uid_hash: int  # FNV-1a of metadata.uid, which shard selectors (KEP-5866) range over
    # Encodings made from this revision of the object (a Table row's cells, its
    # PartialObjectMetadata), kept for the next answer: `runtimes.api.tables` fills it.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def parsed(self) -> Obj:
        obj: Obj = orjson.loads(self.raw)
        return obj


def _fields_of_kinds() -> dict[str, tuple[str, ...]]:
    return {rt.key: (*BASE_FIELDS, *rt.selectable_fields) for rt in all_kinds()}


class _Resource:
    """One kind's objects: entries by key, names sorted per namespace, a label index."""

    def __init__(self, fields: tuple[str, ...]) -> None:
        self.fields = fields
        self.entries: dict[Key, Entry] = {}
        self.names: dict[str, list[str]] = {}  # namespace -> sorted names
        self.by_label: dict[tuple[str, str], set[Key]] = {}
        self.by_label_key: dict[str, set[Key]] = {}
        self.by_field: dict[tuple[str, str], set[Key]] = {}

    def entry(self, revision: int, raw: str, obj: Obj) -> Entry:
        meta = obj.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        uid = str(meta.get("uid") or "").encode("utf-8", "surrogatepass")
        return Entry(revision, raw, labels, field_values(obj, self.fields), fnv1a_64(uid))

    def put(self, key: Key, entry: Entry) -> None:
        old = self.entries.get(key)
        if old is None:
            bisect.insort(self.names.setdefault(key[0], []), key[1])
        else:
            self._unindex(key, old)
        self.entries[key] = entry
        for pair in entry.labels.items():
            self.by_label.setdefault(pair, set()).add(key)
            self.by_label_key.setdefault(pair[0], set()).add(key)
        for pair in entry.fields.items():
            self.by_field.setdefault(pair, set()).add(key)

    def remove(self, key: Key) -> None:
        old = self.entries.pop(key, None)
        if old is None:
            return
        self._unindex(key, old)
        names = self.names[key[0]]
        del names[bisect.bisect_left(names, key[1])]
        if not names:
            del self.names[key[0]]

    def _unindex(self, key: Key, old: Entry) -> None:
        for pair in old.labels.items():
            _drop(self.by_label, pair, key)
            _drop(self.by_label_key, pair[0], key)
        for pair in old.fields.items():
            _drop(self.by_field, pair, key)

    def candidates(self, lookup: Lookup) -> set[Key] | frozenset[Key]:
        """The keys that can meet `lookup`, from its index."""
        kind, name, values = lookup
        if kind == "field":
            return self.by_field.get((name, values[0]), frozenset())
        if not values:
            return self.by_label_key.get(name, frozenset())
        if len(values) == 1:
            return self.by_label.get((name, values[0]), frozenset())
        union: set[Key] = set()
        for value in values:
            union |= self.by_label.get((name, value), frozenset())
        return union

    def narrowest(self, lookups: Iterable[Lookup]) -> tuple[str, set[Key] | frozenset[Key]] | None:
        """The smallest candidate set among `lookups` (every match is in each), and its index."""
        best: tuple[str, set[Key] | frozenset[Key]] | None = None
        for lookup in lookups:
            found = self.candidates(lookup)
            if best is None or len(found) < len(best[1]):
                best = (lookup[0], found)
        return best

    def last_key(self, namespace: str | None) -> Key | None:
        spaces = [namespace] if namespace is not None else sorted(self.names)
        for ns in reversed(spaces):
            names = self.names.get(ns)
            if names:
                return ns, names[-1]
        return None

    def size(self, namespace: str | None) -> int:
        """How many objects one namespace holds (None: all of them)."""
        return len(self.entries) if namespace is None else len(self.names.get(namespace, ()))

    def keys(self, namespace: str | None) -> Iterator[Key]:
        """Keys in (namespace, name) order: of one namespace, or of all."""
        spaces = [namespace] if namespace is not None else sorted(self.names)
        for ns in spaces:
            for name in self.names.get(ns, ()):
                yield ns, name


def _drop[K](index: dict[K, set[Key]], at: K, key: Key) -> None:
    holders = index.get(at)
    if holders is not None:
        holders.discard(key)
        if not holders:
            del index[at]


@dataclass
class CachedSnapshot:
    """One kind's objects at `revision`, copied out of the cache (the cache moves on).

    With index lookups asked for, and when nothing had to be taken back, `keys` holds only the
    objects the narrowest one names (from its index); `last` is then the last key of the whole
    scope, so a page can tell whether anything follows its last match.
    """

    resource: str
    namespace: str | None
    revision: int
    keys: list[Key]  # sorted
    entries: dict[Key, Entry]
    last: Key | None
    index: str = ""  # "label" or "field" when that index chose `keys`

    def stored(self, keys: Iterable[Key]) -> list[Entry]:
        """The entries themselves: their text, and the encodings kept with them."""
        return [self.entries[k] for k in keys if k in self.entries]

    def bodies(self, keys: Iterable[Key]) -> list[Obj]:
        return [entry.parsed() for entry in self.stored(keys)]


class WatchCache:
    """Every kind's objects at `revision`; mutated only under the hub's lock."""

    def __init__(self) -> None:
        self.revision = 0
        self.ready = False
        self._resources: dict[str, _Resource] = {}
        self._fields: dict[str, tuple[str, ...]] | None = None

    def _resource(self, name: str) -> _Resource:
        resource = self._resources.get(name)
        if resource is None:
            if self._fields is None:
                self._fields = _fields_of_kinds()
            resource = _Resource(self._fields.get(name, BASE_FIELDS))
            self._resources[name] = resource
        return resource

    # -- filling (the hub's thread, under its lock) ------------------------------------------

    def reset(self, revision: int) -> None:
        self._resources.clear()
        self.revision = revision
        self.ready = False

    def load(self, rows: Iterable[tuple[str, str, str, int, str]]) -> None:
        """Warm-up: (resource, namespace, name, revision, body) rows, in any order."""
        for resource, namespace, name, revision, body in rows:
            kind = self._resource(resource)
            key = (namespace, name)
            held = kind.entries.get(key)
            if held is None or held.revision < revision:
                kind.put(key, kind.entry(revision, body, orjson.loads(body)))

    def apply(self, events: Iterable[HubEvent]) -> None:
        for event in events:
            kind = self._resource(event.resource)
            key = (event.namespace, event.name)
            held = kind.entries.get(key)
            if held is not None and held.revision >= event.revision:
                continue  # a row read at warm-up was already newer
            if event.type == "DELETED":
                kind.remove(key)
            else:
                raw = event.body or orjson.dumps(event.object).decode()
                kind.put(key, kind.entry(event.revision, raw, event.object))
            self.revision = max(self.revision, event.revision)

    def caught_up(self, revision: int) -> None:
        self.revision = max(self.revision, revision)
        self.ready = True

    # -- reading (any thread, under the hub's lock) -----------------------------------------

    def entry(self, resource: str, key: Key) -> Entry | None:
        """The object's latest entry, or None."""
        return self._resource(resource).entries.get(key)

    def snapshot(
        self,
        resource: str,
        namespace: str | None,
        revision: int,
        since: list[HubEvent],
        lookups: tuple[Lookup, ...] = (),
    ) -> CachedSnapshot:
        """The kind's objects at `revision`: the current entries with the changes in `since`
        (every event after `revision`, oldest first) taken back. `lookups`: requirements every
        object needed meets (the rest are matched by the caller)."""
        kind = self._resource(resource)
        later = [
            e
            for e in since
            if e.revision > revision
            and e.resource == resource
            and (namespace is None or e.namespace == namespace)
        ]
        narrowest = kind.narrowest(lookups) if not later else None
        # The indexes span every namespace: one is worth it only when it names fewer objects
        # than the scope a scan would look at (a common label, listed in a small project).
        if narrowest is not None and len(narrowest[1]) < kind.size(namespace):
            index, found = narrowest
            hits = sorted(k for k in found if namespace is None or k[0] == namespace)
            return CachedSnapshot(
                resource,
                namespace,
                revision,
                hits,
                {k: kind.entries[k] for k in hits},
                kind.last_key(namespace),
                index=index,
            )
        keys = list(kind.keys(namespace))
        entries = {k: kind.entries[k] for k in keys}
        for event in reversed(later):  # newest first: the last one put back is the oldest
            key = (event.namespace, event.name)
            if event.previous is None:
                entries.pop(key, None)
            else:
                raw = event.prev_body or orjson.dumps(event.previous).decode()
                was = str((event.previous.get("metadata") or {}).get("resourceVersion") or "0")
                entries[key] = kind.entry(
                    int(was) if was.isascii() and was.isdigit() else 0, raw, event.previous
                )
        if later:
            keys = sorted(entries)
        return CachedSnapshot(
            resource, namespace, revision, keys, entries, keys[-1] if keys else None
        )
