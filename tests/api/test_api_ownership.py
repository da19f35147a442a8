"""Owner references and DELETE's propagation over HTTP (in-process, no controller running):
who may make a reference block its owner's deletion (kube's OwnerReferencesPermissionEnforcement),
the GC finalizers a DELETE puts on its object, and their validation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from runtimes.registry.kinds import ACCELERATORS
from runtimes.storage import store
from runtimes.storage.models import Event
from tests.support.api import GV, ApiClient, runtime_manifest

TRS = f"{GV}/namespaces/demo/trainingruntimes"


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


@pytest.fixture
def root(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("root")


@pytest.fixture
def accelerator(actors: dict[str, Any]) -> dict[str, Any]:
    body = {"metadata": {"name": "gc-gpu"}, "spec": {}}
    return store.create(ACCELERATORS, None, body).object


def ref(obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meta = obj["metadata"]
    base = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"]}
    return {**base, "uid": meta["uid"], **extra}


def create(client: ApiClient, name: str, *owners: dict[str, Any], **meta: Any) -> Any:
    body = runtime_manifest(name)
    if owners:
        body["metadata"]["ownerReferences"] = list(owners)
    body["metadata"].update(meta)
    return client.post(TRS, body)


def test_it_lets_an_editor_block_the_deletion_of_an_owner_in_her_project(
    alice: ApiClient,
) -> None:
    owner = create(alice, "own-a").json_body
    response = create(alice, "dep-a", ref(owner, blockOwnerDeletion=True, controller=True))
    assert response.status_code == 201, response.json_body
    assert response.json_body["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] is True


def test_it_refuses_a_blocking_reference_to_an_owner_she_cannot_change(
    alice: ApiClient, root: ApiClient, accelerator: dict[str, Any]
) -> None:
    refused = create(alice, "dep-acc", ref(accelerator, blockOwnerDeletion=True))
    assert refused.status_code == 403
    assert refused.json_body["reason"] == "Forbidden"
    assert refused.json_body["message"] == (
        'trainingruntimes.nodus.dev "dep-acc" is forbidden: cannot set blockOwnerDeletion if an '
        "ownerReference refers to a resource you can't set finalizers on: , <nil>"
    )
    assert refused.json_body["details"] == {
        "name": "dep-acc",
        "group": "nodus.dev",
        "kind": "trainingruntimes",
    }
    assert alice.get(f"{TRS}/dep-acc").status_code == 404
    # Not blocking: anyone who may create the dependent may name the owner.
    assert create(alice, "dep-acc", ref(accelerator)).status_code == 201
    # Turning it blocking later is the same change.
    before = Event.objects.count()
    turned = alice.patch(
        f"{TRS}/dep-acc",
        {"metadata": {"ownerReferences": [ref(accelerator, blockOwnerDeletion=True)]}},
    )
    assert turned.status_code == 403
    assert Event.objects.count() == before
    # A platform admin may change the catalog, so he may.
    assert create(root, "dep-root", ref(accelerator, blockOwnerDeletion=True)).status_code == 201


def test_a_blocking_reference_already_there_does_not_need_the_permission_again(
    alice: ApiClient, root: ApiClient, accelerator: dict[str, Any]
) -> None:
    assert create(root, "dep-kept", ref(accelerator, blockOwnerDeletion=True)).status_code == 201
    relabelled = alice.patch(f"{TRS}/dep-kept", {"metadata": {"labels": {"x": "y"}}})
    assert relabelled.status_code == 200, relabelled.json_body


def test_it_refuses_a_blocking_reference_to_a_kind_it_does_not_serve(alice: ApiClient) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u-1"}
    refused = create(alice, "dep-widget", {**widget, "blockOwnerDeletion": True})
    assert refused.status_code == 403
    assert refused.json_body["message"] == (
        'trainingruntimes.nodus.dev "dep-widget" is forbidden: cannot set blockOwnerDeletion in '
        "this case because cannot find RESTMapping for APIVersion example.com/v1 Kind Widget: , "
        'no matches for kind "Widget" in version "example.com/v1"'
    )
    assert create(alice, "dep-widget", widget).status_code == 201


def test_it_refuses_both_gc_finalizers_at_once(alice: ApiClient) -> None:
    response = create(alice, "both", finalizers=["orphan", "foregroundDeletion"])
    assert response.status_code == 422
    [cause] = response.json_body["details"]["causes"]
    assert cause == {
        "reason": "FieldValueInvalid",
        "field": "metadata.finalizers",
        "message": 'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
        "foregroundDeletion cannot be both set",
    }


@pytest.mark.parametrize(
    ("options", "finalizers"),
    [
        ({"propagationPolicy": "Foreground"}, ["foregroundDeletion"]),
        ({"propagationPolicy": "Orphan"}, ["orphan"]),
        ({"orphanDependents": True}, ["orphan"]),
    ],
)
def test_a_delete_marks_the_object_with_the_finalizer_its_policy_needs(
    alice: ApiClient, options: dict[str, Any], finalizers: list[str]
) -> None:
    created = create(alice, "marked").json_body
    response = alice.delete(f"{TRS}/marked", {"kind": "DeleteOptions", **options})
    assert response.status_code == 200
    meta = response.json_body["metadata"]
    assert meta["finalizers"] == finalizers
    assert meta["deletionTimestamp"]
    assert meta["deletionGracePeriodSeconds"] == 0
    assert meta["generation"] == created["metadata"]["generation"] + 1
    assert alice.get(f"{TRS}/marked").json_body["metadata"]["finalizers"] == finalizers


def test_a_second_delete_may_change_the_policy_of_a_deletion_under_way(
    alice: ApiClient,
) -> None:
    create(alice, "switch", finalizers=["nodus.dev/hold"])
    first = alice.delete(f"{TRS}/switch?propagationPolicy=Orphan").json_body["metadata"]
    assert first["finalizers"] == ["nodus.dev/hold", "orphan"]
    second = alice.delete(f"{TRS}/switch?propagationPolicy=Foreground").json_body["metadata"]
    assert second["finalizers"] == ["nodus.dev/hold", "foregroundDeletion"]
    assert second["deletionTimestamp"] == first["deletionTimestamp"]
    assert second["generation"] == first["generation"]
    # Background takes the GC finalizer off; the other finalizer still holds the object.
    third = alice.delete(f"{TRS}/switch?propagationPolicy=Background")
    assert third.json_body["metadata"]["finalizers"] == ["nodus.dev/hold"]
    # A finalizer of the object's own is kept; Background with nothing else there deletes.
    create(alice, "own-orphan", finalizers=["orphan"])
    assert alice.delete(f"{TRS}/own-orphan").json_body["metadata"]["finalizers"] == ["orphan"]
    gone = alice.delete(f"{TRS}/own-orphan?propagationPolicy=Background")
    assert gone.json_body["kind"] == "Status"


def test_it_answers_202_to_orphan_dependents_false_while_the_object_stays(
    alice: ApiClient,
) -> None:
    create(alice, "held", finalizers=["nodus.dev/hold"])
    response = alice.delete(f"{TRS}/held", {"kind": "DeleteOptions", "orphanDependents": False})
    assert response.status_code == 202
    assert response.json_body["metadata"]["finalizers"] == ["nodus.dev/hold"]
    create(alice, "free")
    gone = alice.delete(f"{TRS}/free?orphanDependents=false")
    assert gone.status_code == 200
    assert gone.json_body["kind"] == "Status"


def test_it_answers_400_to_orphan_dependents_that_is_not_a_boolean(alice: ApiClient) -> None:
    create(alice, "typed")
    response = alice.delete(f"{TRS}/typed", {"kind": "DeleteOptions", "orphanDependents": "yes"})
    assert response.status_code == 400
    assert "DeleteOptions.orphanDependents of type bool" in response.json_body["message"]


def test_a_dry_run_foreground_delete_marks_nothing(alice: ApiClient) -> None:
    create(alice, "dry")
    before = Event.objects.count()
    response = alice.delete(f"{TRS}/dry?propagationPolicy=Foreground&dryRun=All")
    assert response.json_body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert Event.objects.count() == before
    assert "finalizers" not in alice.get(f"{TRS}/dry").json_body["metadata"]


def test_a_collection_delete_applies_the_policy_to_every_item(alice: ApiClient) -> None:
    for name in ("col-a", "col-b"):
        assert create(alice, name).status_code == 201
    response = alice.delete(f"{TRS}?propagationPolicy=Orphan")
    assert response.status_code == 200
    for name in ("col-a", "col-b"):
        meta = alice.get(f"{TRS}/{name}").json_body["metadata"]
        assert meta["finalizers"] == ["orphan"]
        assert meta["deletionTimestamp"]


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        (
            "uid",
            {"a": 1},
            "cannot unmarshal object into Go struct field "
            "OwnerReference.ownerReferences.uid of type types.UID",
        ),
        (
            "apiVersion",
            5,
            "cannot unmarshal number into Go struct field "
            "OwnerReference.ownerReferences.apiVersion of type string",
        ),
        (
            "blockOwnerDeletion",
            "yes",
            "cannot unmarshal string into Go struct field "
            "OwnerReference.ownerReferences.blockOwnerDeletion of type bool",
        ),
    ],
)
def test_it_refuses_owner_reference_fields_of_the_wrong_type(
    alice: ApiClient, field: str, value: Any, error: str
) -> None:
    # kube's decoder refuses them (Go's json error): 400 for a body, 422 about a patch.
    owner = create(alice, "typed-owner").json_body
    create(alice, "typed-child", ref(owner, blockOwnerDeletion=True))
    bad = {**ref(owner, blockOwnerDeletion=True), field: value}
    created = create(alice, "typed-new", bad)
    assert created.status_code == 400
    assert created.json_body["message"] == (
        'TrainingRuntime in version "v1beta1" cannot be handled as a TrainingRuntime: json: '
        + error
    )
    patched = alice.patch(f"{TRS}/typed-child", {"metadata": {"ownerReferences": [bad]}})
    assert patched.status_code == 422
    [cause] = patched.json_body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(": json: " + error)


def test_it_drops_repeated_owner_references_with_kubes_warning(alice: ApiClient) -> None:
    owner = create(alice, "dup-owner").json_body
    response = create(alice, "dup-child", ref(owner), ref(owner))
    assert response.status_code == 201
    assert response.json_body["metadata"]["ownerReferences"] == [ref(owner)]
    assert response["Warning"].startswith(
        '299 - ".metadata.ownerReferences contains duplicate entries; API server dedups owner '
        "references in 1.20+, and may reject such requests as early as 1.24; please fix your "
        f'requests; duplicate UID(s) observed: {owner["metadata"]["uid"]}"'
    )
