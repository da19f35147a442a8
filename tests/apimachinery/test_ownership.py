"""kube's GC finalizer rules for DELETE (deletionFinalizersForGarbageCollection) and the owner
reference comparisons of OwnerReferencesPermissionEnforcement."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.apimachinery.ownership import (
    changes_owner_references,
    deletion_finalizers,
    newly_blocking,
    unblocked,
    without_owners,
)


@pytest.mark.parametrize(
    ("finalizers", "policy", "orphan", "expected"),
    [
        ([], None, None, None),  # Background by default: nothing to add
        ([], "Background", None, None),
        ([], "Foreground", None, ["foregroundDeletion"]),
        ([], "Orphan", None, ["orphan"]),
        ([], None, True, ["orphan"]),
        ([], None, False, None),
        (["a/b"], "Orphan", None, ["a/b", "orphan"]),
        (["orphan"], None, None, None),  # the object's own finalizer decides
        (["foregroundDeletion"], None, None, None),
        (["orphan"], "Foreground", None, ["foregroundDeletion"]),
        (["foregroundDeletion", "a/b"], "Orphan", None, ["a/b", "orphan"]),
        (["orphan", "a/b"], "Background", None, ["a/b"]),
        (["foregroundDeletion"], None, False, []),  # an explicit false beats the finalizer
        (["foregroundDeletion"], None, True, ["orphan"]),
    ],
)
def test_it_puts_the_gc_finalizers_as_kube_apiserver_does(
    finalizers: list[str], policy: str | None, orphan: bool | None, expected: list[str] | None
) -> None:
    assert deletion_finalizers(finalizers, policy, orphan) == expected


def obj(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": list(refs)}} if refs else {"metadata": {}}


A = {"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingRuntime", "name": "a", "uid": "1"}
B = {"apiVersion": "nodus.dev/v1beta1", "kind": "TrainingRuntime", "name": "b", "uid": "2"}


def test_it_sees_which_writes_change_owner_references() -> None:
    assert changes_owner_references(obj(A), None)
    assert not changes_owner_references(obj(), None)
    assert not changes_owner_references(obj(A), obj(A))
    assert changes_owner_references(obj(A, B), obj(A))
    assert changes_owner_references(obj({**A, "controller": True}), obj(A))


def test_it_finds_references_newly_made_blocking_by_uid() -> None:
    blocking = {**A, "blockOwnerDeletion": True}
    assert newly_blocking(obj(blocking), None) == [blocking]
    assert newly_blocking(obj(blocking), obj(A)) == [blocking]
    assert newly_blocking(obj(blocking), obj({**A, "blockOwnerDeletion": False})) == [blocking]
    assert (
        newly_blocking(obj(blocking), obj({**A, "name": "renamed", "blockOwnerDeletion": True}))
        == []
    )
    assert newly_blocking(obj(A, B), None) == []


def test_it_removes_and_unblocks_references() -> None:
    refs = [{**A, "blockOwnerDeletion": True}, B]
    assert without_owners(refs, {"1"}) == [B]
    assert unblocked(refs) == [{**A, "blockOwnerDeletion": False}, B]
