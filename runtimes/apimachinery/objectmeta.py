"""ObjectMeta handling the store applies to every kind.

Timestamps, generated names, immutability, generation bumps and the no-op check follow
kube-apiserver (``registry/rest/meta.go``, ``generic/registry/store.go``).
"""

from __future__ import annotations

import json
import secrets
from datetime import UTC, datetime
from typing import Any

from runtimes.apimachinery import metadata_rules
from runtimes.apimachinery.fielderrors import FieldError, forbidden, invalid, required
from runtimes.apimachinery.meta import IMMUTABLE_METADATA, Obj

# apimachinery util/rand: consonants and digits that cannot spell words.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_TOP_ORDER = ("apiVersion", "kind", "metadata", "spec", "status")


def now_timestamp() -> str:
    """RFC 3339 in UTC with second precision, as metav1.Time serialises."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_name(prefix: str) -> str:
    return prefix[:58] + "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))


def canonical(obj: Obj) -> Obj:
    """Orders top-level keys as kube-apiserver prints them."""
    ordered = {key: obj[key] for key in _TOP_ORDER if key in obj}
    ordered.update({key: value for key, value in obj.items() if key not in ordered})
    return ordered


def _without(obj: Obj, *keys: str) -> Obj:
    return {key: value for key, value in obj.items() if key not in keys}


def spec_changed(new: Obj, old: Obj) -> bool:
    """Whether generation must move: anything outside metadata and status changed."""
    return _without(new, "metadata", "status") != _without(old, "metadata", "status")


def unchanged(new: Obj, old: Obj) -> bool:
    """A write that would store the same object writes nothing (and emits no event).

    managedFields count except their timestamps (kube's ignoreManagedFieldsTimestamps): a
    write that only changes who owns what is stored, one that only moves a time is not.
    """
    new_meta = _without(new.get("metadata", {}), "resourceVersion", "managedFields")
    old_meta = _without(old.get("metadata", {}), "resourceVersion", "managedFields")
    return (
        new_meta == old_meta
        and _without(new, "metadata") == _without(old, "metadata")
        and _untimed(new) == _untimed(old)
    )


def _untimed(obj: Obj) -> Any:
    entries = obj.get("metadata", {}).get("managedFields") or []
    if not isinstance(entries, list):
        return entries
    return [_without(e, "time") if isinstance(e, dict) else e for e in entries]


def check_immutable(meta: Obj, old_meta: Obj) -> list[FieldError]:
    problems = []
    for key in IMMUTABLE_METADATA:
        if meta.get(key) not in (None, "", old_meta.get(key)):
            problems.append(invalid(f"metadata.{key}", meta[key], "field is immutable"))
    return problems


def metadata_errors(obj: Obj, namespaced: bool, old: Obj | None) -> list[FieldError]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [invalid("metadata", meta, "must be an object")]
    problems: list[FieldError] = []
    if old is None and meta.get("generateName"):
        # On create, as kube checks it (ValidateObjectMetaAccessor), beside the generated name.
        problems += metadata_rules.validate_generate_name(meta["generateName"])
    name = meta.get("name")
    if not name:
        problems.append(required("metadata.name", "name or generateName is required"))
    else:
        problems += metadata_rules.validate_name(name, "metadata.name")
    problems += metadata_rules.validate_labels(meta.get("labels"), "metadata.labels")
    problems += metadata_rules.validate_annotations(meta.get("annotations"), "metadata.annotations")
    problems += metadata_rules.validate_finalizers(meta.get("finalizers"), "metadata.finalizers")
    problems += metadata_rules.validate_owner_references(meta.get("ownerReferences"))
    if old is not None and old["metadata"].get("deletionTimestamp"):
        before = set(old["metadata"].get("finalizers") or [])
        added = sorted({f for f in meta.get("finalizers") or [] if f not in before})
        if added:
            # Go's %#v of the sorted set, as kube's ValidateNoNewFinalizers writes it.
            found = ", ".join(json.dumps(f, ensure_ascii=False) for f in added)
            problems.append(
                forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers []string{{{found}}}",
                )
            )
    return problems
