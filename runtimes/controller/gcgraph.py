"""The garbage collector's picture of who owns whom, kept from the informers' events.

Every object of every kind is a node, keyed by uid (as kube's GraphBuilder keys ``uidToNode``),
with the owner uids its references name and whether each blocks its owner's deletion; an index
from owner uid to dependent uids answers "whose owner is this?" without a scan. The graph only
says what to look at: each piece of work the collector does is decided on the live objects
(``garbagecollector``), so a graph that lags behind the store costs a wasted look, never a
wrong deletion of an object that has an owner.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from runtimes.apimachinery import ownership
from runtimes.apimachinery.meta import Obj

# ``observe`` and ``forget`` return the work an event calls for, as kube's ``processGraphChanges``
# does: an object naming an owner the graph has not seen (maybe gone, maybe not listed yet); an
# owner that starts a foreground or orphaning deletion (and, for foreground, its dependents); the
# dependents of an owner that went away; the owners in foreground deletion whose blocking
# dependents changed. The graph is fed by one informer thread per kind and read by the
# collector's workers, so every method takes the lock; each is linear in the references of one
# object, and none follows a chain of owners (a chain or a cycle is walked one queue item per
# step by the collector, never by recursion here).

# (resource key, namespace, name, uid): what the collector's queue holds, as kube's identity.
Item = tuple[str, str, str, str]


# What a reference says of its owner besides the uid: (group, kind, name). The namespace is
# the dependent's (or none, for a cluster-scoped owner), so it is not compared.
Coordinates = tuple[str, str, str]


@dataclass(frozen=True)
class Node:
    item: Item
    owners: tuple[tuple[str, bool], ...]  # (owner uid, blockOwnerDeletion)
    deleting: bool  # has a deletionTimestamp
    finalizers: frozenset[str]
    coordinates: Coordinates = ("", "", "")  # its own group, kind and name
    named: tuple[Coordinates, ...] = ()  # the coordinates each owner reference gives

    @property
    def uid(self) -> str:
        return self.item[3]

    @property
    def deleting_dependents(self) -> bool:
        """Being deleted in the foreground: waiting for its blocking dependents to go."""
        return self.deleting and ownership.FOREGROUND in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.deleting and ownership.ORPHAN in self.finalizers


def node_of(resource: str, obj: Obj) -> Node:
    meta = obj["metadata"]
    owners = tuple(
        (str(ref.get("uid") or ""), ownership.blocks(ref))
        for ref in ownership.owner_references(obj)
    )
    named = tuple(
        (
            ownership.group_of(ref.get("apiVersion")),
            str(ref.get("kind") or ""),
            str(ref.get("name") or ""),
        )
        for ref in ownership.owner_references(obj)
    )
    finalizers = meta.get("finalizers") or []
    return Node(
        (resource, meta.get("namespace") or "", meta["name"], str(meta.get("uid") or "")),
        owners,
        bool(meta.get("deletionTimestamp")),
        frozenset(f for f in finalizers if isinstance(f, str)),
        (ownership.group_of(obj.get("apiVersion")), str(obj.get("kind") or ""), meta["name"]),
        named,
    )


class Graph:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, Node] = {}
        self._dependents: dict[str, set[str]] = {}

    # -- changes (informer threads) ------------------------------------------------------------

    def observe(self, node: Node) -> list[Item]:
        """Puts `node` in (new or changed); returns the items to look at."""
        with self._lock:
            old = self._nodes.get(node.uid)
            self._nodes[node.uid] = node
            if old is not None:
                self._unlink(old)
            self._link(node)
            work: list[Item] = []
            if self._suspect(node):
                # An owner not seen (gone, or of a kind not listed yet), a uid that is another
                # object's, or an owner waiting for its dependents to go: the collector decides
                # on the live objects.
                work.append(node.item)
            if node.orphaning or node.deleting_dependents:
                work.append(node.item)
            if node.deleting_dependents and (old is None or not old.deleting_dependents):
                work.extend(self._items(self._dependents.get(node.uid, ())))
            # Owners in foreground deletion whose blocking dependents may have changed.
            before = set(old.owners) if old is not None else set()
            if set(node.owners) != before:
                work.extend(self._waiting_owners(before | set(node.owners)))
            return work

    def forget(self, node: Node) -> list[Item]:
        """Takes a deleted object out; returns its dependents and its waiting owners."""
        with self._lock:
            known = self._nodes.get(node.uid)
            if known is None:
                return []
            del self._nodes[node.uid]
            self._unlink(known)
            work = self._items(self._dependents.get(node.uid, ()))
            work.extend(self._waiting_owners(known.owners))
            return work

    def _link(self, node: Node) -> None:
        for uid, _ in node.owners:
            self._dependents.setdefault(uid, set()).add(node.uid)

    def _unlink(self, node: Node) -> None:
        for uid, _ in node.owners:
            dependents = self._dependents.get(uid)
            if dependents is not None:
                dependents.discard(node.uid)
                if not dependents:
                    del self._dependents[uid]

    def _suspect(self, node: Node) -> bool:
        for (uid, _), named in zip(node.owners, node.named, strict=True):
            owner = self._nodes.get(uid)
            if owner is None or owner.deleting_dependents or owner.coordinates != named:
                return True
        return False

    def _items(self, uids: Iterable[str]) -> list[Item]:
        return [self._nodes[uid].item for uid in uids if uid in self._nodes]

    def _waiting_owners(self, owners: Iterable[tuple[str, bool]]) -> list[Item]:
        return [
            owner.item
            for uid, _ in owners
            if (owner := self._nodes.get(uid)) is not None and owner.deleting_dependents
        ]

    # -- questions (collector workers) ---------------------------------------------------------

    def get(self, uid: str) -> Node | None:
        with self._lock:
            return self._nodes.get(uid)

    def dependents(self, owner_uid: str) -> list[Node]:
        with self._lock:
            return [self._nodes[uid] for uid in self._dependents.get(owner_uid, ())]

    def blocking_dependents(self, owner_uid: str) -> list[Node]:
        """Dependents whose reference to the owner has blockOwnerDeletion: true."""
        return [node for node in self.dependents(owner_uid) if (owner_uid, True) in node.owners]

    def __len__(self) -> int:
        with self._lock:
            return len(self._nodes)
