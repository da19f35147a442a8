"""Owner references and the finalizers of garbage collection, as kube-apiserver handles them."""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery.meta import Obj

# An object's ``metadata.ownerReferences`` name the objects it depends on, by apiVersion, kind,
# name and uid; the garbage collector (``runtimes.controller.garbagecollector``) deletes a
# dependent whose owners are all gone. A DELETE says what becomes of the dependents
# (``propagationPolicy``, or the older ``orphanDependents``): Background deletes the owner at once
# and the collector its dependents afterwards; Foreground and Orphan keep the owner, marked as
# being deleted, under the finalizer ``foregroundDeletion`` or ``orphan`` until the collector has
# deleted the blocking dependents or cut them loose. ``deletion_finalizers`` is kube's
# ``deletionFinalizersForGarbageCollection`` (apiserver ``registry/generic/registry/store.go``):
# an explicit option wins, then a finalizer the object already carries, then the kind's default,
# which for every kind of ours is Background (as for custom resources).
#
# The admission rules are kube's ``OwnerReferencesPermissionEnforcement`` plugin
# (``plugin/pkg/admission/gc``): which references a write changes, and which it newly makes
# blocking. Pure functions over decoded objects; no kind is named.

ORPHAN = "orphan"  # metav1.FinalizerOrphanDependents
FOREGROUND = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
GC_FINALIZERS = (ORPHAN, FOREGROUND)

BACKGROUND_POLICY, FOREGROUND_POLICY, ORPHAN_POLICY = "Background", "Foreground", "Orphan"
POLICIES = [BACKGROUND_POLICY, FOREGROUND_POLICY, ORPHAN_POLICY]


def _should_orphan(
    finalizers: list[str], policy: str | None, orphan_dependents: bool | None
) -> bool:
    if orphan_dependents is not None:
        return orphan_dependents
    if policy is not None:
        return policy == ORPHAN_POLICY
    for finalizer in finalizers:
        if finalizer == ORPHAN:
            return True
        if finalizer == FOREGROUND:
            return False
    return False  # the default policy of our kinds: Background


def _should_delete_dependents(
    finalizers: list[str], policy: str | None, orphan_dependents: bool | None
) -> bool:
    if orphan_dependents is not None:
        return False
    if policy is not None:
        return policy == FOREGROUND_POLICY
    for finalizer in finalizers:
        if finalizer == FOREGROUND:
            return True
        if finalizer == ORPHAN:
            return False
    return False


def deletion_finalizers(
    finalizers: list[str], policy: str | None = None, orphan_dependents: bool | None = None
) -> list[str] | None:
    """The finalizers a DELETE with these options leaves on the object, or None if they stay
    as they are. Both GC finalizers are taken off first and put back as the options say."""
    kept = [f for f in finalizers if f not in GC_FINALIZERS]
    if _should_orphan(finalizers, policy, orphan_dependents):
        kept.append(ORPHAN)
    if _should_delete_dependents(finalizers, policy, orphan_dependents):
        kept.append(FOREGROUND)
    return None if set(kept) == set(finalizers) else kept


def owner_references(obj: Obj) -> list[Obj]:
    """The object's owner references that are objects (validation refuses any other)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [ref for ref in refs if isinstance(ref, dict)] if isinstance(refs, list) else []


def blocks(ref: Obj) -> bool:
    return ref.get("blockOwnerDeletion") is True


def group_of(api_version: Any) -> str:
    """The group of an apiVersion: "" for the core group's "v1"."""
    text = str(api_version or "")
    return text.rpartition("/")[0]


def changes_owner_references(new: Obj, old: Obj | None) -> bool:
    """Whether a write sets or changes the owner references (kube's isChangingOwnerReference)."""
    if old is None:
        return bool(owner_references(new))
    return owner_references(new) != owner_references(old)


def newly_blocking(new: Obj, old: Obj | None) -> list[Obj]:
    """References that block their owner's deletion after the write and did not before
    (added blocking, or turned from unset or false to true); matched by uid, as kube does."""
    blocking = [ref for ref in owner_references(new) if blocks(ref)]
    if old is None:
        return blocking
    before = {ref.get("uid"): ref for ref in owner_references(old)}
    return [ref for ref in blocking if not blocks(before.get(ref.get("uid")) or {})]


def without_owners(refs: list[Obj], uids: set[str]) -> list[Obj]:
    """`refs` less those naming one of `uids`."""
    return [ref for ref in refs if ref.get("uid") not in uids]


def unblocked(refs: list[Obj]) -> list[Obj]:
    """`refs` with every blockOwnerDeletion turned off (the collector's way out of a cycle)."""
    return [{**ref, "blockOwnerDeletion": False} if blocks(ref) else ref for ref in refs]


DUPLICATES_WARNING = (
    ".metadata.ownerReferences contains duplicate entries; API server dedups owner references "
    "in 1.20+, and may reject such requests as early as 1.24; please fix your requests; "
    "duplicate UID(s) observed: {}"
)


def dedup_owner_references(meta: Obj) -> list[str]:
    """Drops owner references equal to an earlier one, as kube-apiserver does before a create or
    update (rest.BeforeCreate/BeforeUpdate); returns the warning to give, if any. References
    that share a uid but differ are kept, as there (validation decides about them)."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list) or len(refs) < 2:
        return []
    kept: list[Any] = []
    duplicates: list[str] = []
    for ref in refs:
        if isinstance(ref, dict) and ref in kept:
            duplicates.append(str(ref.get("uid")))
        else:
            kept.append(ref)
    if not duplicates:
        return []
    meta["ownerReferences"] = kept
    return [DUPLICATES_WARNING.format(", ".join(duplicates))]
