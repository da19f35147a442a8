"""The object endpoints over HTTP: create, get, update, patch, apply, delete, /status, dryRun."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from runtimes.storage import store
from runtimes.storage.models import Event, StoredObject
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
OTHER_IMAGE = "registry.nodus.dev/trainers/other@sha256:" + "cd" * 32


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


@pytest.fixture
def root(api: Callable[[str | None], ApiClient]) -> ApiClient:
    """A platform admin: with the controller, the only one who may write /status."""
    return api("root")


def created(client: ApiClient, name: str = "sft-demo", **spec: Any) -> dict[str, Any]:
    response = client.post(TRS, runtime_manifest(name, **spec))
    assert response.status_code == 201, response.json_body
    body: dict[str, Any] = response.json_body
    return body


def snapshot() -> tuple[int, int, int]:
    """What a write would change: the revision, the event count and the object count."""
    return store.current_revision(), Event.objects.count(), StoredObject.objects.count()


def test_it_creates_with_server_set_metadata_and_drops_client_system_fields(
    alice: ApiClient,
) -> None:
    manifest = runtime_manifest()
    # (a resourceVersion is refused, as kube does: tests/api/test_kube_fidelity.py)
    manifest["metadata"].update(
        uid="forged", generation=7, creationTimestamp="2001-01-01T00:00:00Z"
    )
    manifest["status"] = {"phase": "Ready", "managed": True}
    response = alice.post(TRS, manifest)
    assert response.status_code == 201
    meta = response.json_body["metadata"]
    assert meta["uid"] != "forged"
    assert len(meta["uid"]) == 36
    assert meta["generation"] == 1
    assert meta["resourceVersion"] == str(store.current_revision())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["creationTimestamp"] != "2001-01-01T00:00:00Z"
    assert response.json_body["status"]["phase"] == "Pending"
    assert response.json_body["status"]["managed"] is False


def test_it_applies_defaults_on_create(alice: ApiClient) -> None:
    spec = created(alice)["spec"]
    assert spec["launcher"] == "Plain"
    assert spec["modes"] == ["Train"]
    assert spec["checkpointing"] == {"path": "/nodus/state", "strategy": "HFTrainer"}


def test_it_answers_already_exists_on_a_second_create(alice: ApiClient) -> None:
    created(alice)
    before = snapshot()
    response = alice.post(TRS, runtime_manifest())
    assert response.status_code == 409
    assert response.json_body["reason"] == "AlreadyExists"
    assert response.json_body["message"] == 'trainingruntimes.nodus.dev "sft-demo" already exists'
    assert response.json_body["details"] == {
        "name": "sft-demo",
        "group": "nodus.dev",
        "kind": "trainingruntimes",
    }
    assert snapshot() == before


def test_it_generates_a_name_from_generate_name(alice: ApiClient) -> None:
    manifest = runtime_manifest()
    manifest["metadata"] = {"generateName": "x" * 70}
    response = alice.post(TRS, manifest)
    assert response.status_code == 201
    name = response.json_body["metadata"]["name"]
    assert re.fullmatch(r"x{58}[bcdfghjklmnpqrstvwxz2456789]{5}", name)
    assert alice.get(f"{TRS}/{name}").status_code == 200


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"apiVersion": "nodus.dev/v1"},
            "the API version in the data (nodus.dev/v1) does not match the expected API version "
            "(nodus.dev/v1beta1)",
        ),
        (
            {"metadata": {"name": "sft-demo", "namespace": "other"}},
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
    ],
)
def test_it_refuses_a_body_that_names_another_place(
    alice: ApiClient, change: dict[str, Any], message: str
) -> None:
    before = snapshot()
    response = alice.post(TRS, {**runtime_manifest(), **change})
    assert response.status_code == 400
    assert response.json_body["reason"] == "BadRequest"
    assert response.json_body["message"].startswith(message)
    assert snapshot() == before


def test_it_refuses_a_body_of_another_kind_as_invalid_at_kind(alice: ApiClient) -> None:
    # kube decodes the body, then its validator refuses the kind: 422, named by that kind.
    before = snapshot()
    response = alice.post(TRS, {**runtime_manifest(), "kind": "TrainingJob"})
    assert response.status_code == 422
    assert response.json_body["message"] == (
        'TrainingJob.nodus.dev "sft-demo" is invalid: kind: Invalid value: "TrainingJob": must '
        "be TrainingRuntime"
    )
    assert response.json_body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "TrainingJob": must be TrainingRuntime',
            "field": "kind",
        }
    ]
    assert snapshot() == before


def test_it_gets_and_lists_what_it_created(alice: ApiClient) -> None:
    one = created(alice, "a")
    created(alice, "b")
    assert alice.get(f"{TRS}/a").json_body == one
    listed = alice.get(TRS).json_body
    assert listed["kind"] == "TrainingRuntimeList"
    assert [o["metadata"]["name"] for o in listed["items"]] == ["a", "b"]
    assert listed["metadata"]["resourceVersion"] == str(store.current_revision())
    everywhere = alice.get(f"{GV}/trainingruntimes").json_body
    assert {o["metadata"]["name"] for o in everywhere["items"]} >= {"a", "b"}


def test_it_updates_with_the_current_resource_version(alice: ApiClient) -> None:
    obj = created(alice)
    obj["spec"]["task"] = "DPO"
    response = alice.put(f"{TRS}/sft-demo", obj)
    assert response.status_code == 200
    assert response.json_body["spec"]["task"] == "DPO"
    assert response.json_body["metadata"]["generation"] == 2
    assert int(response.json_body["metadata"]["resourceVersion"]) > int(
        obj["metadata"]["resourceVersion"]
    )


def test_it_requires_a_resource_version_on_update(alice: ApiClient) -> None:
    obj = created(alice)
    del obj["metadata"]["resourceVersion"]
    before = snapshot()
    response = alice.put(f"{TRS}/sft-demo", obj)
    assert response.status_code == 422
    assert response.json_body["reason"] == "Invalid"
    assert response.json_body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0x0: must be specified for an update",
            "field": "metadata.resourceVersion",
        }
    ]
    assert snapshot() == before


def test_it_refuses_a_stale_update_with_kubes_message(alice: ApiClient) -> None:
    stale = created(alice)
    assert alice.patch(f"{TRS}/sft-demo", {"spec": {"task": "DPO"}}).status_code == 200
    stale["spec"]["task"] = "KTO"
    before = snapshot()
    response = alice.put(f"{TRS}/sft-demo", stale)
    assert response.status_code == 409
    assert response.json_body["reason"] == "Conflict"
    assert response.json_body["message"] == (
        'Operation cannot be fulfilled on trainingruntimes.nodus.dev "sft-demo": the object has '
        "been modified; please apply your changes to the latest version and try again"
    )
    assert snapshot() == before


def test_it_answers_not_found_when_updating_what_does_not_exist(alice: ApiClient) -> None:
    body = runtime_manifest("ghost")
    body["metadata"]["resourceVersion"] = "1"
    response = alice.put(f"{TRS}/ghost", body)
    assert response.status_code == 404
    assert response.json_body["message"] == 'trainingruntimes.nodus.dev "ghost" not found'


def test_it_merge_patches_and_null_deletes(alice: ApiClient) -> None:
    created(alice)
    response = alice.patch(
        f"{TRS}/sft-demo", {"metadata": {"labels": {"app": None, "tier": "gold"}}}, MERGE
    )
    assert response.status_code == 200
    assert response.json_body["metadata"]["labels"] == {"tier": "gold"}
    # Metadata-only changes do not bump the generation.
    assert response.json_body["metadata"]["generation"] == 1


def test_it_json_patches_and_fails_a_failed_test_op_with_invalid(alice: ApiClient) -> None:
    created(alice)
    ok = alice.patch(
        f"{TRS}/sft-demo",
        [
            {"op": "test", "path": "/spec/task", "value": "SFT"},
            {"op": "replace", "path": "/spec/task", "value": "DPO"},
        ],
        JSON_PATCH,
    )
    assert ok.status_code == 200
    assert ok.json_body["spec"]["task"] == "DPO"
    before = snapshot()
    failed = alice.patch(
        f"{TRS}/sft-demo", [{"op": "test", "path": "/spec/task", "value": "nope"}], JSON_PATCH
    )
    assert failed.status_code == 422
    assert failed.json_body["reason"] == "Invalid"
    assert "/spec/task" in failed.json_body["message"]
    # kube's generic 422: empty details (no field), so kubectl prints the message itself
    assert "details" not in failed.json_body  # ours by design: docs/kube-compatibility.md row 34
    assert snapshot() == before


def test_it_refuses_a_strategic_merge_patch_as_kube_does_for_custom_resources(
    alice: ApiClient,
) -> None:
    created(alice)
    response = alice.patch(
        f"{TRS}/sft-demo", {"spec": {"task": "DPO"}}, "application/strategic-merge-patch+json"
    )
    assert response.status_code == 415
    assert response.json_body["reason"] == "UnsupportedMediaType"
    assert response.json_body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_it_honours_a_resource_version_inside_a_patch(alice: ApiClient) -> None:
    obj = created(alice)
    alice.patch(f"{TRS}/sft-demo", {"metadata": {"labels": {"a": "b"}}})
    response = alice.patch(
        f"{TRS}/sft-demo",
        {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "spec": {}},
    )
    assert response.status_code == 409


def test_it_applies_server_side_creating_what_is_absent(alice: ApiClient) -> None:
    response = alice.patch(f"{TRS}/ssa?fieldManager=me", runtime_manifest("ssa"), APPLY)
    assert response.status_code == 201
    entries = response.json_body["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("me", "Apply")]
    assert entries[0]["fieldsV1"]["f:spec"]["f:image"] == {}


def test_it_requires_a_field_manager_for_apply(alice: ApiClient) -> None:
    response = alice.patch(f"{TRS}/ssa", runtime_manifest("ssa"), APPLY)
    assert response.status_code == 422
    assert response.json_body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
        "apply patch"
    )
    assert alice.get(f"{TRS}/ssa").status_code == 404


def test_it_refuses_force_on_a_non_apply_patch(alice: ApiClient) -> None:
    created(alice)
    response = alice.patch(f"{TRS}/sft-demo?force=true", {"spec": {"task": "DPO"}})
    assert response.status_code == 422
    assert response.json_body["details"]["causes"][0]["field"] == "force"


def test_it_reports_apply_conflicts_and_lets_force_take_ownership(alice: ApiClient) -> None:
    manifest = runtime_manifest("ssa")
    assert alice.patch(f"{TRS}/ssa?fieldManager=me", manifest, APPLY).status_code == 201
    other = alice.patch(f"{TRS}/ssa?fieldManager=other", {"spec": {"image": OTHER_IMAGE}})
    assert other.status_code == 200
    before = snapshot()
    conflict = alice.patch(f"{TRS}/ssa?fieldManager=me", manifest, APPLY)
    assert conflict.status_code == 409
    assert conflict.json_body["reason"] == "Conflict"
    assert conflict.json_body["message"] == (
        'Apply failed with 1 conflict: conflict with "other" using nodus.dev/v1beta1: .spec.image'
    )
    assert conflict.json_body["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "other" using nodus.dev/v1beta1',
            "field": ".spec.image",
        }
    ]
    assert snapshot() == before
    forced = alice.patch(f"{TRS}/ssa?fieldManager=me&force=true", manifest, APPLY)
    assert forced.status_code == 200
    assert forced.json_body["spec"]["image"] == manifest["spec"]["image"]
    managers = {e["manager"] for e in forced.json_body["metadata"]["managedFields"]}
    assert managers == {"me"}


def test_it_removes_fields_an_applier_stops_applying(alice: ApiClient) -> None:
    manifest = runtime_manifest("ssa")
    manifest["metadata"]["labels"]["tier"] = "gold"
    alice.patch(f"{TRS}/ssa?fieldManager=me", manifest, APPLY)
    del manifest["metadata"]["labels"]["tier"]
    response = alice.patch(f"{TRS}/ssa?fieldManager=me", manifest, APPLY)
    assert response.status_code == 200
    assert response.json_body["metadata"]["labels"] == {"app": "trainer"}


def test_it_deletes_with_a_success_status(alice: ApiClient) -> None:
    obj = created(alice)
    response = alice.delete(f"{TRS}/sft-demo", {"propagationPolicy": "Background"})
    assert response.status_code == 200
    assert response.json_body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "sft-demo",
            "group": "nodus.dev",
            "kind": "trainingruntimes",
            "uid": obj["metadata"]["uid"],
        },
    }
    assert alice.get(f"{TRS}/sft-demo").status_code == 404
    assert Event.objects.order_by("-revision").first().type == "DELETED"  # type: ignore[union-attr]


def test_it_marks_an_object_with_finalizers_and_deletes_it_with_the_last_one(
    alice: ApiClient,
) -> None:
    created(alice)
    alice.patch(f"{TRS}/sft-demo", {"metadata": {"finalizers": ["nodus.dev/a", "nodus.dev/b"]}})
    marked = alice.delete(f"{TRS}/sft-demo")
    assert marked.status_code == 200
    assert marked.json_body["kind"] == "TrainingRuntime"
    assert marked.json_body["metadata"]["deletionTimestamp"].endswith("Z")
    assert marked.json_body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert marked.json_body["metadata"]["generation"] == 2
    assert alice.get(f"{TRS}/sft-demo").status_code == 200
    one_left = alice.patch(
        f"{TRS}/sft-demo", [{"op": "remove", "path": "/metadata/finalizers/0"}], JSON_PATCH
    )
    assert one_left.json_body["metadata"]["finalizers"] == ["nodus.dev/b"]
    gone = alice.patch(
        f"{TRS}/sft-demo", [{"op": "remove", "path": "/metadata/finalizers"}], JSON_PATCH
    )
    assert gone.status_code == 200
    # The object as last written, as kube answers (kubectl prints `patched`), not a Status.
    assert gone.json_body["kind"] == "TrainingRuntime"
    assert "finalizers" not in gone.json_body["metadata"]
    assert gone.json_body["metadata"]["deletionTimestamp"].endswith("Z")
    assert alice.get(f"{TRS}/sft-demo").status_code == 404


def test_it_checks_delete_preconditions(alice: ApiClient) -> None:
    created(alice)
    response = alice.delete(f"{TRS}/sft-demo", {"preconditions": {"uid": "not-the-uid"}})
    assert response.status_code == 409
    assert (
        "the UID in the precondition (not-the-uid) does not match" in response.json_body["message"]
    )
    assert alice.get(f"{TRS}/sft-demo").status_code == 200


def test_it_ignores_status_on_the_main_endpoint(alice: ApiClient) -> None:
    created(alice)
    response = alice.patch(f"{TRS}/sft-demo", {"status": {"phase": "Ready"}})
    assert response.status_code == 200
    assert response.json_body["status"]["phase"] == "Pending"


def test_it_writes_only_status_through_the_status_subresource(
    alice: ApiClient, root: ApiClient
) -> None:
    obj = created(alice)
    response = root.patch(
        f"{TRS}/sft-demo/status",
        {
            "status": {"phase": "Ready", "observedGeneration": 1},
            "spec": {"task": "DPO"},
            "metadata": {"labels": {"sneaky": "yes"}},
        },
    )
    assert response.status_code == 200, response.json_body
    body = response.json_body
    assert body["status"]["phase"] == "Ready"
    assert body["spec"] == obj["spec"]
    assert body["metadata"]["labels"] == obj["metadata"]["labels"]
    assert body["metadata"]["generation"] == 1
    assert alice.get(f"{TRS}/sft-demo/status").json_body["status"]["phase"] == "Ready"


def test_it_derives_managed_whatever_status_says(alice: ApiClient, root: ApiClient) -> None:
    created(alice)
    response = root.patch(f"{TRS}/sft-demo/status", {"status": {"managed": True}})
    assert response.status_code in {200, 422}
    assert alice.get(f"{TRS}/sft-demo").json_body["status"]["managed"] is False


def test_it_stores_and_emits_nothing_on_dry_run(alice: ApiClient, root: ApiClient) -> None:
    created(alice)
    before = snapshot()
    create = alice.post(f"{TRS}?dryRun=All", runtime_manifest("dry"))
    assert create.status_code == 201
    assert create.json_body["metadata"]["uid"]
    assert "resourceVersion" not in create.json_body["metadata"]
    patch = alice.patch(f"{TRS}/sft-demo?dryRun=All", {"spec": {"task": "DPO"}})
    assert patch.status_code == 200
    assert patch.json_body["spec"]["task"] == "DPO"
    current = alice.get(f"{TRS}/sft-demo").json_body
    current["spec"]["task"] = "KTO"
    assert alice.put(f"{TRS}/sft-demo?dryRun=All", current).status_code == 200
    apply = alice.patch(f"{TRS}/new?dryRun=All&fieldManager=me", runtime_manifest("new"), APPLY)
    assert apply.status_code == 201
    status = root.patch(f"{TRS}/sft-demo/status?dryRun=All", {"status": {"phase": "Ready"}})
    assert status.status_code == 200
    delete = alice.delete(f"{TRS}/sft-demo", {"dryRun": ["All"]})
    assert delete.status_code == 200
    everything = alice.delete(f"{TRS}?dryRun=All")
    assert everything.status_code == 200
    assert [o["metadata"]["name"] for o in everything.json_body["items"]] == ["sft-demo"]
    assert snapshot() == before
    assert alice.get(f"{TRS}/sft-demo").json_body["spec"]["task"] == "SFT"
    assert alice.get(f"{TRS}/dry").status_code == 404


def test_it_refuses_an_unknown_dry_run_value(alice: ApiClient) -> None:
    response = alice.post(f"{TRS}?dryRun=Some", runtime_manifest())
    assert response.status_code == 422
    assert response.json_body["details"]["causes"][0] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: []string{"Some"}: supported values: "All"',
        "field": "dryRun",
    }


def test_it_validates_fields_strictly_when_asked(alice: ApiClient) -> None:
    manifest = runtime_manifest()
    manifest["spec"]["foo"] = 1
    manifest["spec"]["requires"] = {"bar": True}
    response = alice.post(f"{TRS}?fieldValidation=Strict", manifest)
    assert response.status_code == 400
    assert response.json_body["message"] == (
        'TrainingRuntime in version "v1beta1" cannot be handled as a TrainingRuntime: strict '
        'decoding error: unknown field "spec.foo", unknown field "spec.requires.bar"'
    )
    assert alice.get(f"{TRS}/sft-demo").status_code == 404


def test_it_warns_about_unknown_fields_by_default_and_drops_them(alice: ApiClient) -> None:
    manifest = runtime_manifest()
    manifest["spec"]["foo"] = 1
    response = alice.post(TRS, manifest)
    assert response.status_code == 201
    assert '299 - "unknown field \\"spec.foo\\""' in response["Warning"]
    assert "foo" not in response.json_body["spec"]


def test_it_drops_unknown_fields_silently_when_told_to_ignore(alice: ApiClient) -> None:
    manifest = runtime_manifest()
    manifest["spec"]["foo"] = 1
    response = alice.post(f"{TRS}?fieldValidation=Ignore", manifest)
    assert response.status_code == 201
    assert "unknown field" not in response.get("Warning", "")
    assert "foo" not in response.json_body["spec"]


def test_it_refuses_an_unknown_field_validation_value(alice: ApiClient) -> None:
    response = alice.post(f"{TRS}?fieldValidation=Loose", runtime_manifest())
    assert response.status_code == 422
    assert response.json_body["details"]["causes"][0]["field"] == "fieldValidation"


def test_it_answers_namespaces_for_projects(alice: ApiClient) -> None:
    demo = alice.get("/api/v1/namespaces/demo")
    assert demo.status_code == 200
    assert demo.json_body["kind"] == "Namespace"
    assert demo.json_body["metadata"]["name"] == "demo"
    assert demo.json_body["status"] == {"phase": "Active"}
    missing = alice.get("/api/v1/namespaces/nope")
    assert missing.status_code == 404
    assert missing.json_body["message"] == 'namespaces "nope" not found'


def test_it_answers_namespace_not_found_for_unknown_projects(
    api: Callable[[str | None], ApiClient],
) -> None:
    for who in ("alice", "charlie", "root"):
        response = api(who).post(f"{GV}/namespaces/nope/trainingruntimes", runtime_manifest())
        assert response.status_code == 404, (who, response.json_body)
        assert response.json_body["message"] == 'namespaces "nope" not found'
    assert StoredObject.objects.filter(namespace="nope").count() == 0


def test_a_list_in_a_namespace_that_does_not_exist_is_empty_as_in_kube(
    api: Callable[[str | None], ApiClient],
) -> None:
    """kube-apiserver lists (and watches) a namespace that doesn't exist as empty; who may not
    read there gets the usual 403."""
    made = created(api("alice"))  # in demo: the store's revision moves on
    listed = api("root").get(f"{GV}/namespaces/nope/trainingruntimes")
    assert listed.status_code == 200
    assert listed.json_body["items"] == []
    revision = int(listed.json_body["metadata"]["resourceVersion"])
    assert revision >= int(made["metadata"]["resourceVersion"])
    for who in ("alice", "charlie"):
        refused = api(who).get(f"{GV}/namespaces/nope/trainingruntimes")
        assert refused.status_code == 403, who
        assert refused.json_body["reason"] == "Forbidden"


def test_it_refuses_new_finalizers_on_an_object_being_deleted(alice: ApiClient) -> None:
    created(alice)
    alice.patch(f"{TRS}/sft-demo", {"metadata": {"finalizers": ["nodus.dev/a"]}})
    alice.delete(f"{TRS}/sft-demo")
    before = snapshot()
    response = alice.patch(
        f"{TRS}/sft-demo", {"metadata": {"finalizers": ["nodus.dev/a", "nodus.dev/b"]}}
    )
    assert response.status_code == 422
    assert (
        "no new finalizers can be added if the object is being deleted"
        in (response.json_body["message"])
    )
    assert snapshot() == before


def test_it_deletes_a_collection_by_label(alice: ApiClient) -> None:
    created(alice, "a")
    created(alice, "b")
    alice.patch(f"{TRS}/b", {"metadata": {"labels": {"app": "other"}}})
    before = int(alice.get(TRS).json_body["metadata"]["resourceVersion"])
    response = alice.delete(f"{TRS}?labelSelector=app%3Dtrainer")
    assert response.status_code == 200
    assert [o["metadata"]["name"] for o in response.json_body["items"]] == ["a"]
    # The list's revision, read before the deletes, as kube's deletecollection answers.
    assert int(response.json_body["metadata"]["resourceVersion"]) == before
    assert alice.get(f"{TRS}/a").status_code == 404
    assert alice.get(f"{TRS}/b").status_code == 200


def test_it_accepts_only_patch_media_types_on_patch(alice: ApiClient) -> None:
    created(alice)
    response = alice.patch(f"{TRS}/sft-demo", {"spec": {"task": "DPO"}}, "application/json")
    assert response.status_code == 415
    assert response.json_body["message"].endswith(
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_it_reads_a_body_without_content_type_as_json_but_not_a_patch(alice: ApiClient) -> None:
    import orjson

    body = orjson.dumps(runtime_manifest("untyped"))
    created = alice.client.generic("POST", TRS, data=body, content_type="", headers=alice.headers)
    assert created.status_code == 201, created.content
    patched = alice.client.generic(
        "PATCH", f"{TRS}/untyped", data=b"{}", content_type="", headers=alice.headers
    )
    assert patched.status_code == 415


@pytest.mark.parametrize(
    "body",
    [
        {"dryRun": True},
        {"dryRun": [1]},
        {"preconditions": ["uid"]},
        {"preconditions": {"resourceVersion": 12}},
    ],
)
def test_it_answers_400_to_delete_options_of_the_wrong_type(alice: ApiClient, body: Any) -> None:
    alice.post(TRS, runtime_manifest("keep"))
    response = alice.delete(f"{TRS}/keep", body)
    assert response.status_code == 400, response.content
    assert response.json_body["reason"] == "BadRequest"
    assert alice.get(f"{TRS}/keep").status_code == 200


def test_it_treats_duplicate_json_keys_by_field_validation(alice: ApiClient) -> None:
    import orjson

    body = (
        orjson.dumps(runtime_manifest("dup"))
        .decode()
        .replace('"task":"SFT"', '"task":"DPO","task":"SFT"')
    )
    strict = alice.post(f"{TRS}?fieldValidation=Strict", body)
    assert strict.status_code == 400
    assert strict.json_body["message"] == (
        'TrainingRuntime in version "v1beta1" cannot be handled as a TrainingRuntime: strict '
        'decoding error: duplicate field "spec.task"'
    )
    assert alice.get(f"{TRS}/dup").status_code == 404
    warned = alice.post(TRS, body)
    assert warned.status_code == 201
    assert warned["Warning"].startswith('299 - "duplicate field \\"spec.task\\""')
    assert warned.json_body["spec"]["task"] == "SFT"  # the last one wins, as in Go
    ignored = alice.patch(
        f"{TRS}/dup?fieldValidation=Ignore", '{"spec":{"task":"KTO","task":"DPO"}}'
    )
    assert ignored.status_code == 200
    assert "duplicate" not in ignored.get("Warning", "")
