"""Server-side apply over HTTP as structured-merge-diff does it: co-ownership, list and map
types from the schema, conflicts and force, the client-side to server-side apply upgrade,
managedFields written by clients, and the field managers of the server's own writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from runtimes.storage import store
from runtimes.storage.models import Event
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
OTHER_IMAGE = "registry.nodus.dev/trainers/other@sha256:" + "cd" * 32
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def partial(name: str, **spec: Any) -> dict[str, Any]:
    """An apply configuration naming only some fields (no required-field completeness)."""
    return {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name},
        "spec": spec,
    }


def apply(client: ApiClient, name: str, config: Any, manager: str, force: bool = False) -> Any:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    return client.patch(f"{TRS}/{name}{query}", config, APPLY)


def applied(client: ApiClient, name: str, config: Any, manager: str, **kw: Any) -> dict[str, Any]:
    response = apply(client, name, config, manager, **kw)
    assert response.status_code in (200, 201), response.json_body
    body: dict[str, Any] = response.json_body
    return body


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(manager, operation) -> fieldsV1."""
    return {
        (e["manager"], e["operation"]): e["fieldsV1"]
        for e in obj["metadata"].get("managedFields", [])
    }


def test_two_appliers_of_one_value_co_own_it(alice: ApiClient) -> None:
    applied(alice, "co", runtime_manifest("co"), "first")
    obj = applied(alice, "co", partial("co", image=runtime_manifest()["spec"]["image"]), "second")
    # Same value: no conflict, and both own it.
    assert "f:image" in owners(obj)["first", "Apply"]["f:spec"]
    assert owners(obj)["second", "Apply"] == {"f:spec": {"f:image": {}}}

    # The first drops it: it stays, with the second alone owning it.
    without_image = runtime_manifest("co")
    del without_image["spec"]["image"]
    obj = applied(alice, "co", without_image, "first")
    assert obj["spec"]["image"] == runtime_manifest()["spec"]["image"]
    assert "f:image" not in owners(obj)["first", "Apply"]["f:spec"]

    # Now the second owns it alone, so it may change it; and dropping it removes it... which
    # the schema refuses (image is required), so the value can only change hands.
    obj = applied(alice, "co", partial("co", image=OTHER_IMAGE), "second")
    assert obj["spec"]["image"] == OTHER_IMAGE


def test_a_co_owned_value_goes_when_its_last_owner_drops_it(alice: ApiClient) -> None:
    applied(alice, "co2", runtime_manifest("co2", environmentTasks="AttemptAPI"), "first")
    applied(alice, "co2", partial("co2", environmentTasks="AttemptAPI"), "second")
    assert applied(alice, "co2", runtime_manifest("co2"), "first")["spec"]["environmentTasks"]
    obj = applied(alice, "co2", partial("co2"), "second")
    assert "environmentTasks" not in obj["spec"]
    # What it applies now is an empty spec: an empty map is a value of its own.
    assert owners(obj)["second", "Apply"] == {"f:spec": {}}


def test_a_set_list_is_owned_item_by_item(alice: ApiClient) -> None:
    applied(alice, "modes", runtime_manifest("modes", modes=["Train"]), "trainer")
    obj = applied(alice, "modes", partial("modes", modes=["Evaluate"]), "evaluator")
    # Each applier owns its own items: no conflict, both kept.
    assert sorted(obj["spec"]["modes"]) == ["Evaluate", "Train"]
    assert owners(obj)["trainer", "Apply"]["f:spec"]["f:modes"] == {'v:"Train"': {}}
    assert owners(obj)["evaluator", "Apply"]["f:spec"]["f:modes"] == {'v:"Evaluate"': {}}
    # Dropping an item removes only that applier's item.
    obj = applied(alice, "modes", partial("modes", modes=["Train"]), "evaluator")
    assert obj["spec"]["modes"] == ["Train"]
    assert owners(obj)["evaluator", "Apply"]["f:spec"]["f:modes"] == {'v:"Train"': {}}


def test_a_map_list_is_owned_by_key(alice: ApiClient) -> None:
    adapter = {"name": "adapter", "path": "/out/adapter"}
    logs = {"name": "logs", "path": "/out/logs"}
    applied(alice, "outs", runtime_manifest("outs", outputs=[adapter]), "trainer")
    obj = applied(alice, "outs", partial("outs", outputs=[logs]), "logger")
    assert obj["spec"]["outputs"] == [adapter, logs]
    item = owners(obj)["logger", "Apply"]["f:spec"]["f:outputs"]['k:{"name":"logs"}']
    assert item == {".": {}, "f:name": {}, "f:path": {}}

    # Changing another manager's item field is a conflict naming the item by key.
    moved = {"name": "adapter", "path": "/elsewhere"}
    conflict = apply(alice, "outs", partial("outs", outputs=[logs, moved]), "logger")
    assert conflict.status_code == 409
    assert [c["field"] for c in conflict.json_body["details"]["causes"]] == [
        '.spec.outputs[name="adapter"].path'
    ]
    # Force takes the field and removes it from the trainer's entry.
    obj = applied(alice, "outs", partial("outs", outputs=[logs, moved]), "logger", force=True)
    assert moved in obj["spec"]["outputs"]
    trainer = owners(obj)["trainer", "Apply"]["f:spec"]["f:outputs"]['k:{"name":"adapter"}']
    assert "f:path" not in trainer
    assert "f:name" in trainer


def test_an_atomic_list_is_one_value(alice: ApiClient) -> None:
    applied(alice, "argv", runtime_manifest("argv"), "first")
    conflict = apply(alice, "argv", partial("argv", command=["python", "other.py"]), "second")
    assert conflict.status_code == 409
    assert conflict.json_body["message"] == (
        'Apply failed with 1 conflict: conflict with "first": .spec.command'
    )
    obj = applied(alice, "argv", partial("argv", command=["python", "x.py"]), "second", force=True)
    assert obj["spec"]["command"] == ["python", "x.py"]
    assert "f:command" not in owners(obj)["first", "Apply"]["f:spec"]
    assert owners(obj)["second", "Apply"]["f:spec"]["f:command"] == {}


def _sidecar(key: str) -> dict[str, Any]:
    secret = {"name": "tokens", "key": key}
    return {"name": "rollout", "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": secret}}]}


def test_an_atomic_map_is_one_value(alice: ApiClient) -> None:
    manifest = runtime_manifest("amap", defaults={"sidecars": [_sidecar("a")]})
    obj = applied(alice, "amap", manifest, "first")
    sidecar = owners(obj)["first", "Apply"]["f:spec"]["f:defaults"]["f:sidecars"]
    env = sidecar['k:{"name":"rollout"}']["f:env"]['k:{"name":"TOKEN"}']
    assert env["f:valueFrom"] == {"f:secretKeyRef": {}}  # owned whole, not name and key

    conflict = apply(alice, "amap", partial("amap", defaults={"sidecars": [_sidecar("b")]}), "b")
    assert conflict.status_code == 409
    assert [c["field"] for c in conflict.json_body["details"]["causes"]] == [
        '.spec.defaults.sidecars[name="rollout"].env[name="TOKEN"].valueFrom.secretKeyRef'
    ]


def test_the_openapi_document_declares_every_list_and_the_atomic_maps(alice: ApiClient) -> None:
    doc = alice.get("/openapi/v3/apis/nodus.dev/v1beta1").json_body
    schemas = doc["components"]["schemas"]
    lists: list[tuple[str, dict[str, Any]]] = []
    pending = [(name, schema) for name, schema in schemas.items()]
    while pending:
        where, node = pending.pop()
        if isinstance(node, dict):
            kind = where.split(".properties.", 1)[0]
            if (
                node.get("type") == "array"
                and kind.startswith("dev.nodus")
                and not kind.endswith("List")
            ):
                lists.append((where, node))
            pending.extend((f"{where}.{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            pending.extend((where, v) for v in node)
    assert lists
    for where, node in lists:
        assert node.get("x-kubernetes-list-type") in ("atomic", "set", "map"), where
        if node["x-kubernetes-list-type"] == "map":
            assert node["x-kubernetes-list-map-keys"], where
    spec = schemas["dev.nodus.v1beta1.TrainingRuntimeSpec"]["properties"]
    assert spec["modes"]["x-kubernetes-list-type"] == "set"
    assert spec["presets"]["x-kubernetes-list-type"] == "atomic"
    assert schemas["dev.nodus.v1beta1.SecretKeySelector"]["x-kubernetes-map-type"] == "atomic"
    offerings = schemas["dev.nodus.v1beta1.AcceleratorSpec"]["properties"]["offerings"]
    assert offerings["x-kubernetes-list-map-keys"] == ["count"]
    gvk = schemas["dev.nodus.v1beta1.Accelerator"]["x-kubernetes-group-version-kind"]
    assert gvk == [{"group": "nodus.dev", "version": "v1beta1", "kind": "Accelerator"}]


# From client-side to server-side apply ---------------------------------------------------------


def _client_side_applied(client: ApiClient, name: str) -> dict[str, Any]:
    """What `kubectl apply` (client-side) leaves: the annotation, owned by its Update entry."""
    manifest = runtime_manifest(name)
    annotated = json.loads(json.dumps(manifest))
    annotated["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(manifest)}
    response = client.post(f"{TRS}?fieldManager=kubectl-client-side-apply", annotated)
    assert response.status_code == 201, response.json_body
    body: dict[str, Any] = response.json_body
    return body


def test_kubectls_apply_takes_over_what_client_side_apply_set(alice: ApiClient) -> None:
    _client_side_applied(alice, "csa")
    changed = runtime_manifest("csa")
    changed["spec"]["task"] = "DPO"
    # Another applier conflicts: only kubectl upgrades from the annotation.
    assert apply(alice, "csa", changed, "someone").status_code == 409
    obj = applied(alice, "csa", changed, "kubectl")
    assert obj["spec"]["task"] == "DPO"
    mine = owners(obj)["kubectl", "Apply"]["f:spec"]
    assert {"f:task", "f:image", "f:command"} <= set(mine)
    # The changed field was taken (as by force); unchanged ones are co-owned, as in kube.
    theirs = owners(obj)["kubectl-client-side-apply", "Update"]["f:spec"]
    assert "f:task" not in theirs
    assert "f:image" in theirs
    # The annotation follows what kubectl applied, so a later client-side apply diffs from it.
    assert json.loads(obj["metadata"]["annotations"][LAST_APPLIED])["spec"]["task"] == "DPO"


def test_kubectl_still_conflicts_on_fields_changed_since_client_side_apply(
    alice: ApiClient,
) -> None:
    _client_side_applied(alice, "csa2")
    patched = alice.patch(f"{TRS}/csa2?fieldManager=kubectl-edit", {"spec": {"image": OTHER_IMAGE}})
    assert patched.status_code == 200
    conflict = apply(alice, "csa2", runtime_manifest("csa2"), "kubectl")
    assert conflict.status_code == 409
    assert [c["field"] for c in conflict.json_body["details"]["causes"]] == [".spec.image"]


def test_it_honours_kubectls_managed_fields_upgrade_patch(alice: ApiClient) -> None:
    """client-go csaupgrade: the Update entry becomes kubectl's Apply entry, by a JSON patch."""
    obj = _client_side_applied(alice, "upgrade")
    entries = obj["metadata"]["managedFields"]
    upgraded = [dict(e, manager="kubectl", operation="Apply") for e in entries]
    patch = [
        {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": obj["metadata"]["resourceVersion"],
        },
        {"op": "replace", "path": "/metadata/managedFields", "value": upgraded},
    ]
    response = alice.patch(f"{TRS}/upgrade?fieldManager=kubectl", patch, JSON_PATCH)
    assert response.status_code == 200, response.json_body
    assert list(owners(response.json_body)) == [("kubectl", "Apply")]
    assert response.json_body["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]

    # kubectl now owns what the client-side apply set: dropping the label removes it.
    manifest = runtime_manifest("upgrade")
    del manifest["metadata"]["labels"]
    obj = applied(alice, "upgrade", manifest, "kubectl")
    assert "app" not in obj["metadata"].get("labels", {})


# managedFields written by clients --------------------------------------------------------------


def test_a_single_empty_entry_resets_managed_fields(alice: ApiClient) -> None:
    applied(alice, "reset", runtime_manifest("reset"), "first")
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}]
    response = alice.patch(f"{TRS}/reset?fieldManager=resetter", patch, JSON_PATCH)
    assert response.status_code == 200
    assert "managedFields" not in response.json_body["metadata"]
    assert "managedFields" not in alice.get(f"{TRS}/reset").json_body["metadata"]

    # With nobody tracked, the next apply hands what is live to before-first-apply, which
    # then conflicts like any other manager.
    obj = applied(alice, "reset", partial("reset", environmentTasks="AttemptAPI"), "second")
    assert "f:image" in owners(obj)["before-first-apply", "Update"]["f:spec"]
    assert owners(obj)["second", "Apply"] == {"f:spec": {"f:environmentTasks": {}}}
    conflict = apply(alice, "reset", partial("reset", task="DPO"), "second")
    assert conflict.json_body["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using '
        "nodus.dev/v1beta1: .spec.task"
    )


def test_an_empty_list_or_a_body_without_them_keeps_managed_fields(alice: ApiClient) -> None:
    before = applied(alice, "keep", runtime_manifest("keep"), "first")["metadata"]["managedFields"]
    emptied = alice.patch(f"{TRS}/keep?fieldManager=x", {"metadata": {"managedFields": []}})
    assert emptied.status_code == 200
    assert emptied.json_body["metadata"]["managedFields"] == before
    current = alice.get(f"{TRS}/keep").json_body
    del current["metadata"]["managedFields"]
    replaced = alice.put(f"{TRS}/keep?fieldManager=x", current)
    assert replaced.status_code == 200
    assert replaced.json_body["metadata"]["managedFields"] == before


def test_managed_fields_that_do_not_decode_are_ignored_as_kube_does(alice: ApiClient) -> None:
    before = applied(alice, "junk", runtime_manifest("junk"), "first")["metadata"]["managedFields"]
    for junk in (
        [{"manager": "m", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}],
        [{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}],
        [
            {
                "manager": "m",
                "operation": "Update",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"x:bad": {}},
            }
        ],
    ):
        patch = [{"op": "replace", "path": "/metadata/managedFields", "value": junk}]
        response = alice.patch(f"{TRS}/junk?fieldManager=x", patch, JSON_PATCH)
        assert response.status_code == 200, junk
        assert response.json_body["metadata"]["managedFields"] == before, junk


def test_it_refuses_managed_fields_kube_validation_refuses(alice: ApiClient) -> None:
    obj = applied(alice, "bad", runtime_manifest("bad"), "first")
    revision = store.current_revision()
    entry = dict(obj["metadata"]["managedFields"][0], manager="m" * 129)
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [entry]}]
    response = alice.patch(f"{TRS}/bad?fieldManager=x", patch, JSON_PATCH)
    assert response.status_code == 422
    causes = response.json_body["details"]["causes"]
    assert causes == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 128 bytes",
            "field": "metadata.managedFields[0].manager",
        }
    ]
    assert store.current_revision() == revision

    entry = dict(obj["metadata"]["managedFields"][0], manager="tab\there")
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [entry]}]
    response = alice.patch(f"{TRS}/bad?fieldManager=x", patch, JSON_PATCH)
    assert response.status_code == 422
    assert response.json_body["details"]["causes"][0]["message"] == (
        'Invalid value: "tab\\there": invalid character U+0009 (at position 3)'
    )


def test_an_apply_may_not_carry_managed_fields(alice: ApiClient) -> None:
    manifest = runtime_manifest("carry")
    manifest["metadata"]["managedFields"] = []
    response = apply(alice, "carry", manifest, "me")
    assert response.status_code == 400
    assert response.json_body["message"] == "metadata.managedFields must be nil"
    assert alice.get(f"{TRS}/carry").status_code == 404


def test_a_write_that_only_changes_ownership_is_stored(alice: ApiClient) -> None:
    obj = applied(alice, "own", runtime_manifest("own"), "first")
    events = Event.objects.count()
    entries = [dict(e, manager="renamed") for e in obj["metadata"]["managedFields"]]
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": entries}]
    response = alice.patch(f"{TRS}/own?fieldManager=x", patch, JSON_PATCH)
    assert list(owners(response.json_body)) == [("renamed", "Apply")]
    assert Event.objects.count() == events + 1


# Who wrote it ----------------------------------------------------------------------------------


def test_a_status_write_records_its_subresource(api: Callable[[str | None], ApiClient]) -> None:
    root = api("root")
    applied(root, "st", runtime_manifest("st"), "first")
    status = {"status": {"phase": "Ready", "observedGeneration": 1}}
    response = root.patch(f"{TRS}/st/status?fieldManager=statuser", status)
    assert response.status_code == 200
    entry = next(
        e for e in response.json_body["metadata"]["managedFields"] if e["manager"] == "statuser"
    )
    assert entry["subresource"] == "status"
    assert entry["operation"] == "Update"
    assert entry["fieldsV1"] == {"f:status": {"f:observedGeneration": {}, "f:phase": {}}}
