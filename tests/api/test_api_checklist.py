"""Coverage items that no other test pinned down on their own (docs/kube-compatibility.md).

Each test names its checklist item. Most run in-process through the Django test client; the
`kubectl`-marked ones drive the real kubectl against the session's live daphne server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtimes.api import watchstream
from runtimes.api.listoptions import selection
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Event, StoredObject
from runtimes.watch.hub import HubEvent
from tests.support.api import GV, ApiClient, runtime_manifest
from tests.support.kubectl import Kubectl, Result
from tests.support.liveserver import LiveServer

TRS = f"{GV}/namespaces/demo/trainingruntimes"
TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def create(client: ApiClient, name: str) -> dict[str, Any]:
    response = client.post(TRS, runtime_manifest(name))
    assert response.status_code == 201, response.json_body
    body: dict[str, Any] = response.json_body
    return body


def snapshot() -> tuple[int, int, int]:
    return store.current_revision(), Event.objects.count(), StoredObject.objects.count()


def test_it_names_the_first_table_column_as_a_name(alice: ApiClient) -> None:
    """Item 11: the Name column has format "name", so kubectl prints it as the object's name."""
    create(alice, "a")
    table = alice.get(TRS, Accept=TABLE_V1).json_body
    name = table["columnDefinitions"][0]
    assert (name["name"], name["type"], name["format"], name["priority"]) == (
        "Name",
        "string",
        "name",
        0,
    )
    assert table["rows"][0]["cells"][0] == "a"
    assert len(table["rows"][0]["cells"]) == len(table["columnDefinitions"])


def test_it_renders_a_table_to_a_client_that_accepts_only_v1beta1(alice: ApiClient) -> None:
    """Item 12: older clients ask for meta.k8s.io/v1beta1 Tables and get exactly that."""
    create(alice, "a")
    listed = alice.get(TRS, Accept=TABLE_V1BETA1)
    assert listed.status_code == 200
    assert (listed.json_body["kind"], listed.json_body["apiVersion"]) == (
        "Table",
        "meta.k8s.io/v1beta1",
    )
    row = listed.json_body["rows"][0]
    assert row["cells"][0] == "a"
    assert row["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    assert row["object"]["kind"] == "PartialObjectMetadata"
    one = alice.get(f"{TRS}/a", Accept=TABLE_V1BETA1).json_body
    assert (one["kind"], one["apiVersion"]) == ("Table", "meta.k8s.io/v1beta1")
    assert [r["cells"][0] for r in one["rows"]] == ["a"]


@pytest.mark.parametrize("as_", ["Tabel", "PartialObjectMetadataList;v=v2", "Table;v=v2"])
def test_it_answers_406_to_an_unknown_as_without_a_fallback(alice: ApiClient, as_: str) -> None:
    """Item 12: an `as=` the server cannot render is 406, unless plain JSON is also acceptable."""
    create(alice, "a")
    accept = f"application/json;as={as_};g=meta.k8s.io" + ("" if "v=" in as_ else ";v=v1")
    refused = alice.get(TRS, Accept=accept)
    assert refused.status_code == 406
    assert refused.json_body["reason"] == "NotAcceptable"
    fallback = alice.get(TRS, Accept=f"{accept}, application/json")
    assert fallback.status_code == 200
    assert fallback.json_body["kind"] == "TrainingRuntimeList"


def test_it_lists_any_revision_for_resource_version_zero(alice: ApiClient) -> None:
    """Item 19: resourceVersion=0 means "any" (never Exact at 0), with or without NotOlderThan."""
    create(alice, "a")
    create(alice, "b")
    for query in ("resourceVersion=0", "resourceVersion=0&resourceVersionMatch=NotOlderThan"):
        response = alice.get(f"{TRS}?{query}")
        assert response.status_code == 200, (query, response.json_body)
        assert [o["metadata"]["name"] for o in response.json_body["items"]] == ["a", "b"]
        assert int(response.json_body["metadata"]["resourceVersion"]) > 0


def test_it_bumps_the_generation_for_spec_changes_and_when_deletion_starts(
    alice: ApiClient, api: Callable[[str | None], ApiClient]
) -> None:
    """Item 29: labels, finalizers and /status leave the generation; spec and delete bump it."""

    def generation(response: Any) -> int:
        assert response.status_code == 200, response.json_body
        value: int = response.json_body["metadata"]["generation"]
        return value

    assert create(alice, "gen")["metadata"]["generation"] == 1
    assert generation(alice.patch(f"{TRS}/gen", {"metadata": {"labels": {"a": "b"}}})) == 1
    # Status is the controller's (or a platform admin's) to write.
    root = api("root")
    assert generation(root.patch(f"{TRS}/gen/status", {"status": {"phase": "Ready"}})) == 1
    assert generation(alice.patch(f"{TRS}/gen", {"spec": {"task": "SFT"}})) == 1  # no change
    assert generation(alice.patch(f"{TRS}/gen", {"spec": {"task": "DPO"}})) == 2
    finalizers = {"metadata": {"finalizers": ["nodus.dev/hold"]}}
    assert generation(alice.patch(f"{TRS}/gen", finalizers)) == 2
    assert generation(alice.delete(f"{TRS}/gen")) == 3
    assert alice.get(f"{TRS}/gen").json_body["metadata"]["generation"] == 3
    # A second delete of an object already being deleted does not bump it again.
    assert generation(alice.delete(f"{TRS}/gen")) == 3


def test_it_reads_delete_options_from_the_query(alice: ApiClient) -> None:
    """Item 34: dryRun, propagationPolicy and gracePeriodSeconds may come as query parameters."""
    obj = create(alice, "q")
    before = snapshot()
    dry = alice.delete(f"{TRS}/q?dryRun=All")
    assert dry.status_code == 200
    assert dry.json_body["status"] == "Success"
    assert snapshot() == before
    bad = alice.delete(f"{TRS}/q?propagationPolicy=Sometimes")
    assert bad.status_code == 422
    assert bad.json_body["details"]["causes"][0]["field"] == "propagationPolicy"
    assert snapshot() == before
    # Orphan from the query: the object waits, marked, for the garbage collector (as in kube).
    orphaning = alice.delete(f"{TRS}/q?propagationPolicy=Orphan&gracePeriodSeconds=0")
    assert orphaning.status_code == 200
    assert orphaning.json_body["metadata"]["finalizers"] == ["orphan"]
    assert orphaning.json_body["metadata"]["deletionTimestamp"]
    # Background from the query takes the GC finalizer off again, and nothing else holds it.
    gone = alice.delete(f"{TRS}/q?propagationPolicy=Background")
    assert gone.status_code == 200
    assert gone.json_body["details"] == {
        "name": "q",
        "group": "nodus.dev",
        "kind": "trainingruntimes",
        "uid": obj["metadata"]["uid"],
    }
    assert alice.get(f"{TRS}/q").status_code == 404


def test_it_dry_runs_a_delete_held_by_a_finalizer_without_marking_it(alice: ApiClient) -> None:
    """Items 31 and 34: a dry-run delete answers the marked object but stores nothing."""
    create(alice, "held")
    alice.patch(f"{TRS}/held", {"metadata": {"finalizers": ["nodus.dev/hold"]}})
    before = snapshot()
    dry = alice.delete(f"{TRS}/held", {"kind": "DeleteOptions", "dryRun": ["All"]})
    assert dry.status_code == 200
    assert dry.json_body["metadata"]["deletionTimestamp"]
    assert snapshot() == before
    assert "deletionTimestamp" not in alice.get(f"{TRS}/held").json_body["metadata"]


def test_it_deletes_a_collection_by_field_selector(alice: ApiClient) -> None:
    """Item 35: deletecollection honours fieldSelector as well as labelSelector."""
    create(alice, "a")
    create(alice, "b")
    response = alice.delete(f"{TRS}?fieldSelector=metadata.name%3Db")
    assert response.status_code == 200
    assert [o["metadata"]["name"] for o in response.json_body["items"]] == ["b"]
    assert [o["metadata"]["name"] for o in alice.get(TRS).json_body["items"]] == ["a"]
    bad = alice.delete(f"{TRS}?fieldSelector=spec.foo%3D1")
    assert bad.status_code == 400
    assert alice.get(f"{TRS}/a").status_code == 200


def test_it_types_watch_events_by_field_selector_transitions() -> None:
    """Item 41: with a field selector too, leaving is DELETED (old object, new RV), entering
    is ADDED and staying is MODIFIED."""
    rt = lookup("trainingruntimes")

    def runtime(rv: int, task: str) -> dict[str, Any]:
        meta = {"name": "a", "namespace": "demo", "resourceVersion": str(rv)}
        return {
            "apiVersion": rt.api_version,
            "kind": rt.kind,
            "metadata": meta,
            "spec": {"task": task},
        }

    sft = selection(rt, "", "spec.task=SFT")

    def change(rv: int, before: dict[str, Any], after: dict[str, Any]) -> Any:
        return watchstream.typed(HubEvent(rv, rt.key, "demo", "a", "MODIFIED", after, before), sft)

    left = change(2, runtime(1, "SFT"), runtime(2, "DPO"))
    assert left is not None
    assert left[0] == "DELETED"
    assert left[1]["spec"]["task"] == "SFT"
    assert left[1]["metadata"]["resourceVersion"] == "2"
    assert change(3, runtime(2, "DPO"), runtime(3, "KTO")) is None
    assert change(4, runtime(3, "KTO"), runtime(4, "SFT")) == ("ADDED", runtime(4, "SFT"))
    assert change(5, runtime(4, "SFT"), runtime(5, "SFT")) == ("MODIFIED", runtime(5, "SFT"))


@pytest.fixture
def kubectl(daphne_server: LiveServer, tmp_path: Path) -> Kubectl:
    """kubectl as alice in namespace demo, with a fresh home (so a cold discovery cache)."""
    return Kubectl(
        daphne_server.https_url, daphne_server.tokens["alice"], daphne_server.ca_pem, tmp_path
    )


def run(kubectl: Kubectl, *args: str, env: dict[str, str] | None = None) -> Result:
    result = kubectl(*args, env=env)
    assert result.ok, str(result)
    return result


def kubectl_create(kubectl: Kubectl, tmp_path: Path, manifest: dict[str, Any]) -> None:
    path = tmp_path / f"{manifest['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run(kubectl, "create", "-f", str(path))


@pytest.mark.kubectl
def test_kubectl_sorts_and_prints_custom_columns(kubectl: Kubectl, tmp_path: Path) -> None:
    """Item 11: --sort-by needs rows carrying whole objects; custom-columns reads plain JSON."""
    for name, task in (("srt-b", "SFT"), ("srt-a", "DPO"), ("srt-c", "KTO")):
        manifest = runtime_manifest(name, task=task)
        manifest["metadata"]["labels"] = {"checklist": "sort"}
        kubectl_create(kubectl, tmp_path, manifest)
    selector = ("-l", "checklist=sort")
    table = run(kubectl, "get", "tr", *selector, "--sort-by=.spec.task", "--no-headers").stdout
    assert [line.split()[0] for line in table.splitlines()] == ["srt-a", "srt-c", "srt-b"]
    columns = run(
        kubectl, "get", "tr", *selector, "-o", "custom-columns=N:.metadata.name,T:.spec.task"
    ).stdout.splitlines()
    assert [line.split() for line in columns] == [
        ["N", "T"],
        ["srt-a", "DPO"],
        ["srt-b", "SFT"],
        ["srt-c", "KTO"],
    ]


@pytest.mark.kubectl
def test_kubectl_views_the_last_applied_configuration(kubectl: Kubectl, tmp_path: Path) -> None:
    """Item 24: apply records what it sent; view-last-applied prints exactly that back."""
    manifest = runtime_manifest("last-applied", task="DPO")
    path = tmp_path / "tr.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run(kubectl, "apply", "-f", str(path))
    shown = run(kubectl, "apply", "view-last-applied", "tr", "last-applied", "-o", "json")
    recorded = json.loads(shown.stdout)
    assert recorded["spec"] == manifest["spec"]
    assert recorded["metadata"]["name"] == "last-applied"


@pytest.mark.kubectl
def test_kubectl_deletes_with_orphan_cascade_and_by_label(kubectl: Kubectl, tmp_path: Path) -> None:
    """Items 34 and 35: --cascade=orphan sends propagationPolicy=Orphan; -l deletes a selection."""
    for name, group in (("orph", "one"), ("lbl-a", "two"), ("lbl-b", "two"), ("lbl-c", "three")):
        manifest = runtime_manifest(name)
        manifest["metadata"]["labels"] = {"checklist": group}
        kubectl_create(kubectl, tmp_path, manifest)
    # The server has no controller, so nothing takes the `orphan` finalizer off: do not wait.
    orphaned = run(kubectl, "delete", "tr", "orph", "--cascade=orphan", "--wait=false")
    assert 'trainingruntime.nodus.dev "orph" deleted' in orphaned.stdout
    marked = json.loads(run(kubectl, "get", "tr", "orph", "-o", "json").stdout)["metadata"]
    assert marked["finalizers"] == ["orphan"]
    assert marked["deletionTimestamp"]
    by_label = run(kubectl, "delete", "tr", "-l", "checklist=two").stdout.splitlines()
    assert len(by_label) == 2
    left = run(kubectl, "get", "tr", "-l", "checklist in (two,three)", "-o", "name").stdout
    assert left.split() == ["trainingruntime.nodus.dev/lbl-c"]


@pytest.mark.kubectl
def test_kubectl_edit_records_its_field_manager(kubectl: Kubectl, tmp_path: Path) -> None:
    """Item 28: kubectl edit sends a merge patch as fieldManager=kubectl-edit, which managedFields
    keeps as an Update entry owning what it changed."""
    kubectl_create(kubectl, tmp_path, runtime_manifest("edit-owner"))
    editor = {"KUBE_EDITOR": "sed -i s/task:\\ SFT/task:\\ DPO/"}
    assert "edited" in run(kubectl, "edit", "tr", "edit-owner", env=editor).stdout
    shown = run(kubectl, "get", "tr", "edit-owner", "--show-managed-fields", "-o", "json").stdout
    entries = {e["manager"]: e for e in json.loads(shown)["metadata"]["managedFields"]}
    edit = entries["kubectl-edit"]
    assert edit["operation"] == "Update"
    assert "f:task" in edit["fieldsV1"]["f:spec"]
