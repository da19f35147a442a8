"""The garbage collector: deletes dependents whose owners are gone, as kube's does.

It follows kube-controller-manager's ``pkg/controller/garbagecollector``. The graph
(``gcgraph``) is kept from the controller's informers, one per served kind, and says what to
look at; every decision is taken on the live objects, read from the store just before it acts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runtimes.accounts.access import COLLECTOR_SUBRESOURCE, allowed
from runtimes.accounts.serviceaccounts import ServiceAccount
from runtimes.apimachinery import errors, managedfields, ownership
from runtimes.apimachinery.meta import Obj
from runtimes.apimachinery.objectmeta import now_timestamp
from runtimes.controller.gcgraph import Graph, Item, node_of
from runtimes.controller.workers import run_worker
from runtimes.controller.workqueue import WorkQueue
from runtimes.registry.kinds import for_reference
from runtimes.registry.resources import ResourceType
from runtimes.storage import store
from runtimes.watch.informer import Handlers, Informer

# - an object none of whose owners exists any more (not found, or found with another uid: the
#   owner it named was deleted and a namesake created) is deleted, with the propagation its own
#   GC finalizer asks for (Background if none); an owner of a kind we don't serve is neither
#   there nor absent, and the object is left alone (kube retries such an item; we look again at
#   the next resync);
# - an object with a live owner keeps living, but loses its references to owners that are gone
#   or that wait for their dependents in a foreground deletion (so they need not wait for it);
# - an object whose only owners are in a foreground deletion is deleted, in the foreground
#   itself when it has dependents of its own; a dependent that is also deleting its dependents
#   makes it unblock its own references first, which breaks a cycle of foreground deletions;
# - an owner in a foreground deletion (finalizer ``foregroundDeletion``) loses that finalizer once
#   no dependent with ``blockOwnerDeletion: true`` is left, and the store then deletes it;
# - an owner being deleted with finalizer ``orphan`` has its reference taken out of every
#   dependent, then loses the finalizer.
# - A cluster-scoped object naming a namespaced owner is an error that no retry mends: kube
#   records an OwnerRefInvalidNamespace event and leaves it; we log it and leave it.
#
# A deletion carries the uid and resourceVersion the decision was made on; if the object moved
# in between and its references did not, the deletion is tried again on the new revision, else
# the object is looked at afresh. Removing the last GC finalizer lets the store delete the owner.
#
# Bounded work: one queue of items (deduplicated, backed off on failure), ``workers`` threads
# each with its own database connection and CPU pacing, the same as the reconcile loop. Owner
# chains, however long, and cycles are walked one item at a time through the queue, never by
# recursion. Before it lets go of a foreground or orphaning owner the collector waits until every
# informer has reached the owner's revision, so that the dependents it judges by are those the
# owner had. The writes are the controller's service account's, checked as the pseudo-subresource
# ``accounts.access.COLLECTOR_SUBRESOURCE`` (which no URL serves: the same token cannot change a
# spec through the API); revoking the token stops them.

log = logging.getLogger("nodus.gc")

# Who the collector's writes are recorded as in managedFields (kube: kube-controller-manager).
FIELD_MANAGER = "nodus-garbage-collector"
# How soon an owner comes back while the informers have not reached its revision.
CATCH_UP_SECONDS = 0.1


class Unresolvable(Exception):
    """An owner reference that cannot be judged now: a kind we don't serve, or a namespaced
    owner of a cluster-scoped object."""


class _Moved(Exception):
    """The object is not the one the decision was made about (another uid)."""


@dataclass
class Verdict:
    solid: list[Obj]
    dangling: list[Obj]
    waiting: list[Obj]


class GarbageCollector:
    def __init__(
        self,
        kinds: Sequence[ResourceType],
        *,
        account: ServiceAccount | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 300.0,
        jitter: float = 0.25,
    ) -> None:
        self.kinds = {rt.key: rt for rt in kinds}
        self.graph = Graph()
        self.account = account or ServiceAccount()
        self.queue: WorkQueue[Item] = WorkQueue(
            backoff_base=backoff_base, backoff_max=backoff_max, jitter=jitter
        )
        self.informers: list[Informer] = []
        self.idle = threading.Event()  # set whenever the queue has drained (tests wait on it)

    # -- feeding the graph (informer threads) --------------------------------------------------

    def handlers(self, rt: ResourceType) -> Handlers:
        def changed(_old: Obj, new: Obj) -> None:
            self._enqueue(self.graph.observe(node_of(rt.key, new)))

        return Handlers(
            on_add=lambda obj: changed(obj, obj),
            on_update=changed,
            on_delete=lambda obj: self._enqueue(self.graph.forget(node_of(rt.key, obj))),
        )

    def _enqueue(self, items: list[Item]) -> None:
        for item in items:
            self.queue.add(item)

    def quiet(self) -> bool:
        """Nothing queued, delayed or being processed."""
        return self.queue.quiet()

    def caught_up(self, revision: int) -> bool:
        """Whether every informer has applied the store's events up to `revision`."""
        return all(informer.last_sync_revision >= revision for informer in self.informers)

    # -- workers -------------------------------------------------------------------------------

    def work(self, stopping: threading.Event, cpu_share: float, keep: Callable[..., None]) -> None:
        """One worker: takes items until the queue shuts down. `keep(failed=...)` looks after
        the thread's database connection (the loop's ConnectionKeeper)."""

        def handle(item: Item) -> None:
            if self.process(item):
                self.queue.forget(item)
            else:
                self.queue.add_rate_limited(item)

        run_worker(
            self.queue,
            handle,
            share=cpu_share,
            stopping=stopping,
            keep=keep,
            describe=lambda item: f"{item[0]} {item[1]}/{item[2]}: collecting",
            idle=self.idle,
            logger=log,
        )

    def process(self, item: Item) -> bool:
        """Looks at one object; False when it must be looked at again after a backoff."""
        rt = self.kinds.get(item[0])
        if rt is None:
            return True
        obj = self._get(rt, item[1], item[2])
        if obj is None or obj["metadata"].get("uid") != item[3]:
            return True  # gone (its DELETED event takes care of its dependents)
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            if ownership.ORPHAN in finalizers:
                return self._orphan_dependents(rt, obj)
            if ownership.FOREGROUND in finalizers:
                return self._process_deleting_dependents(rt, obj)
            return True  # being deleted is a one-way trip: its end will come as an event
        refs = ownership.owner_references(obj)
        if not refs:
            return True
        try:
            verdict = self._classify(rt, obj, refs)
        except Unresolvable as exc:
            log.warning("%s %s/%s: %s; leaving it", *item[:3], exc)
            return True
        if verdict.solid:
            gone = {str(ref.get("uid")) for ref in verdict.dangling + verdict.waiting}
            if gone:
                self._update(rt, obj, lambda refs: ownership.without_owners(refs, gone))
            return True
        if verdict.waiting and self.graph.dependents(item[3]):
            if any(dep.deleting_dependents for dep in self.graph.dependents(item[3])):
                # Our owner waits for us and a dependent of ours waits for us too: a cycle of
                # foreground deletions. Stop blocking our owners, then go in the foreground.
                obj = self._update(rt, obj, ownership.unblocked) or obj
            return self._delete(rt, obj, ownership.FOREGROUND_POLICY)
        finalizers = meta.get("finalizers") or []
        if ownership.ORPHAN in finalizers:
            policy = ownership.ORPHAN_POLICY
        elif ownership.FOREGROUND in finalizers:
            policy = ownership.FOREGROUND_POLICY
        else:
            policy = ownership.BACKGROUND_POLICY
        log.info("%s %s/%s: no owner keeps it; deleting (%s)", *item[:3], policy)
        return self._delete(rt, obj, policy)

    # -- judging owners --------------------------------------------------------------------

    def _classify(self, rt: ResourceType, obj: Obj, refs: list[Obj]) -> Verdict:
        verdict = Verdict([], [], [])
        namespace = obj["metadata"].get("namespace") or ""
        for ref in refs:
            owner_rt = for_reference(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
            if owner_rt is None:
                raise Unresolvable(
                    f"no kind is served for apiVersion {ref.get('apiVersion')!r}, kind "
                    f"{ref.get('kind')!r} (owner {ref.get('name')!r})"
                )
            if owner_rt.namespaced and not rt.namespaced:
                raise Unresolvable(
                    f"a cluster-scoped object cannot be owned by the namespaced {owner_rt.kind} "
                    f'"{ref.get("name")}" (OwnerRefInvalidNamespace)'
                )
            owner = self._get(owner_rt, namespace, str(ref.get("name", "")))
            if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
                verdict.dangling.append(ref)
            elif owner["metadata"].get("deletionTimestamp") and ownership.FOREGROUND in (
                owner["metadata"].get("finalizers") or []
            ):
                verdict.waiting.append(ref)
            else:
                verdict.solid.append(ref)
        return verdict

    # -- owners being deleted --------------------------------------------------------------

    def _later_unless_caught_up(self, rt: ResourceType, owner: Obj) -> bool:
        """Whether the informers lag behind `owner`: then it comes back shortly (no backoff:
        nothing failed)."""
        if self.caught_up(int(owner["metadata"]["resourceVersion"])):
            return False
        self.queue.add_after(self._item(rt, owner), CATCH_UP_SECONDS)
        return True

    def _process_deleting_dependents(self, rt: ResourceType, owner: Obj) -> bool:
        if self._later_unless_caught_up(rt, owner):
            return True
        blocking = self.graph.blocking_dependents(owner["metadata"]["uid"])
        if not blocking:
            self._remove_finalizer(rt, owner, ownership.FOREGROUND)
            return True
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.queue.add(dependent.item)
        return True  # each dependent's going brings us back (gcgraph.forget)

    def _orphan_dependents(self, rt: ResourceType, owner: Obj) -> bool:
        if self._later_unless_caught_up(rt, owner):
            return True
        uid = owner["metadata"]["uid"]
        for dependent in self.graph.dependents(uid):
            dep_rt = self.kinds.get(dependent.item[0])
            current = self._get(dep_rt, *dependent.item[1:3]) if dep_rt else None
            if dep_rt is None or current is None or current["metadata"]["uid"] != dependent.uid:
                continue
            self._update(dep_rt, current, lambda refs: ownership.without_owners(refs, {uid}))
        self._remove_finalizer(rt, owner, ownership.ORPHAN)
        return True

    # -- writes, as the controller's service account ---------------------------------------

    def _authorize(self, rt: ResourceType, verb: str, namespace: str, name: str) -> None:
        user = self.account.user()
        if not allowed(user, verb, namespace if rt.namespaced else "", COLLECTOR_SUBRESOURCE):
            username = user.get_username() if user.is_authenticated else "system:anonymous"
            raise errors.forbidden(username, verb, rt.plural, rt.group, namespace, name)

    def _get(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        try:
            return store.get(rt, namespace, name)
        except errors.ApiError as exc:
            if exc.reason == "NotFound":
                return None
            raise

    def _delete(self, rt: ResourceType, obj: Obj, policy: str) -> bool:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        self._authorize(rt, "delete", namespace, name)
        refs = ownership.owner_references(obj)
        for _attempt in range(2):
            try:
                store.delete(
                    rt,
                    namespace,
                    name,
                    uid=meta["uid"],
                    resource_version=meta["resourceVersion"],
                    propagation=policy,
                )
                return True
            except errors.ApiError as exc:
                if exc.reason == "NotFound":
                    return True
                if exc.reason != "Conflict":
                    raise
            # The object moved since we judged it: if its owners did not, delete it as it is now
            # (kube's deleteObject does the same); otherwise judge it again.
            current = self._get(rt, namespace, name)
            if current is None or current["metadata"]["uid"] != meta["uid"]:
                return True
            if ownership.owner_references(current) != refs:
                self.queue.add(self._item(rt, current))
                return True
            meta = current["metadata"]
        return False

    def _update(
        self, rt: ResourceType, obj: Obj, change_refs: Callable[[list[Obj]], list[Obj]]
    ) -> Obj | None:
        """Rewrites the object's owner references (dropping the field when none are left)."""
        meta = obj["metadata"]

        def change(current: Obj) -> Obj:
            current_meta = current["metadata"]
            if current_meta.get("uid") != meta["uid"]:
                raise _Moved
            refs = change_refs(ownership.owner_references(current))
            if refs:
                current_meta["ownerReferences"] = refs
            else:
                current_meta.pop("ownerReferences", None)
            return current

        return self._mutate(rt, obj, change)

    def _remove_finalizer(self, rt: ResourceType, obj: Obj, finalizer: str) -> None:
        meta = obj["metadata"]

        def change(current: Obj) -> Obj:
            current_meta = current["metadata"]
            if current_meta.get("uid") != meta["uid"]:
                raise _Moved
            kept = [f for f in current_meta.get("finalizers") or [] if f != finalizer]
            if kept:
                current_meta["finalizers"] = kept
            else:
                current_meta.pop("finalizers", None)
            return current

        where = f"{meta.get('namespace') or ''}/{meta['name']}"
        log.info("%s: removing finalizer %s", where, finalizer)
        self._mutate(rt, obj, change)

    def _mutate(self, rt: ResourceType, obj: Obj, change: Callable[[Obj], Obj]) -> Obj | None:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        self._authorize(rt, "update", namespace, name)

        def record(old: Obj | None, new: Obj) -> Obj:
            entries = (old or {}).get("metadata", {}).get("managedFields") or []
            new["metadata"]["managedFields"] = managedfields.record_update(
                entries,
                FIELD_MANAGER,
                "Update",
                rt.api_version,
                old,
                new,
                "",
                now_timestamp(),
                list_map_keys=rt.list_map_keys,
            )
            if not new["metadata"]["managedFields"]:
                del new["metadata"]["managedFields"]
            return new

        try:
            result = store.mutate(rt, namespace, name, change, on_prepared=record)
        except _Moved:
            return None
        except errors.ApiError as exc:
            if exc.reason == "NotFound":
                return None
            raise
        return None if result.deleted else result.object

    @staticmethod
    def _item(rt: ResourceType, obj: Obj) -> Item:
        meta = obj["metadata"]
        return (rt.key, meta.get("namespace") or "", meta["name"], meta["uid"])
