"""Real kubectl v1.35 against a live daphne server: every command a user types, end to end.

One server serves the whole module (see tests/support/liveserver.py); each test names its own
runtimes so tests stay independent, and each kubectl gets a fresh home, so every test also
exercises discovery from a cold cache.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support.api import runtime_manifest
from tests.support.kubectl import Kubectl, Result
from tests.support.liveserver import LiveServer

pytestmark = pytest.mark.kubectl

OTHER_IMAGE = "registry.nodus.dev/trainers/other@sha256:" + "cd" * 32
Kc = Callable[..., Kubectl]


@pytest.fixture
def kc(daphne_server: LiveServer, tmp_path: Path) -> Kc:
    """kc("alice") is kubectl as alice (default namespace demo); kc(None) is anonymous."""

    def make(who: str | None = "alice", namespace: str = "demo") -> Kubectl:
        token = daphne_server.tokens[who] if who else None
        home = tmp_path / f"{who or 'anonymous'}-{namespace}"
        return Kubectl(daphne_server.https_url, token, daphne_server.ca_pem, home, namespace)

    return make


def write(tmp_path: Path, manifest: dict[str, Any], name: str = "tr.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(manifest))
    return str(path)


def ok(result: Result) -> Result:
    assert result.ok, str(result)
    return result


def failed(result: Result) -> Result:
    assert not result.ok, str(result)
    return result


def get(kubectl: Kubectl, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(ok(kubectl("get", "tr", name, "-o", "json")).stdout)
    return obj


def test_it_reports_the_server_version_without_a_skew_warning(kc: Kc) -> None:
    result = ok(kc()("version"))
    assert "Server Version: v1.35.0-nodus" in result.stdout
    assert "WARNING" not in result.stderr
    # kube 1.35 emulates its own release and stays compatible with the one before.
    served = json.loads(ok(kc()("version", "-o", "json")).stdout)["serverVersion"]
    assert (served["emulationMajor"], served["emulationMinor"]) == ("1", "35")
    assert (served["minCompatibilityMajor"], served["minCompatibilityMinor"]) == ("1", "34")


def test_it_answers_the_health_probes_kubectl_reads(kc: Kc) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        assert ok(kc()("get", "--raw", path)).stdout == "ok", path


def test_it_lists_the_api_resources(kc: Kc) -> None:
    result = ok(kc()("api-resources", "--api-group=nodus.dev", "-o", "wide"))
    lines = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    runtimes = lines["trainingruntimes"]
    assert runtimes[1:5] == ["tr", "nodus.dev/v1beta1", "true", "TrainingRuntime"]
    assert runtimes[5] == "delete,deletecollection,get,list,patch,create,update,watch"
    assert runtimes[6] == "nodus,all"
    assert lines["accelerators"][1:5] == ["acc", "nodus.dev/v1beta1", "false", "Accelerator"]


def test_it_resolves_every_name_of_the_kind(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("names"))))
    for resource in ("tr", "trainingruntime", "trainingruntimes", "trainingruntimes.nodus.dev"):
        assert "names" in ok(kubectl("get", resource)).stdout, resource
    # The category lists both kinds in it.
    assert "trainingruntime.nodus.dev/names" in ok(kubectl("get", "nodus")).stdout


def test_it_creates_gets_and_prints_the_table(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    created = ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("crud"))))
    assert created.stdout.strip() == "trainingruntime.nodus.dev/crud created"
    table = ok(kubectl("get", "tr", "crud")).stdout.splitlines()
    assert table[0].split() == ["NAME", "TASK", "LAUNCHER", "PHASE", "MANAGED", "AGE"]
    assert table[1].split()[:5] == ["crud", "SFT", "Plain", "Pending", "false"]
    wide = ok(kubectl("get", "tr", "crud", "-o", "wide")).stdout.splitlines()[0]
    assert "MODES" in wide
    as_yaml = yaml.safe_load(ok(kubectl("get", "tr", "crud", "-o", "yaml")).stdout)
    as_json = get(kubectl, "crud")
    assert as_yaml == as_json
    assert as_json["metadata"]["generation"] == 1
    assert as_json["spec"]["launcher"] == "Plain"
    uid = ok(kubectl("get", "tr", "crud", "-o", "jsonpath={.metadata.uid}")).stdout
    assert uid == as_json["metadata"]["uid"]
    again = failed(kubectl("create", "-f", write(tmp_path, runtime_manifest("crud"))))
    assert 'trainingruntimes.nodus.dev "crud" already exists' in again.stderr
    assert "(AlreadyExists)" in again.stderr


def test_it_lists_across_projects_with_a_namespace_column(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("everywhere"))))
    lines = ok(kubectl("get", "tr", "-A")).stdout.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert any(line.split()[:2] == ["demo", "everywhere"] for line in lines)


def test_it_replaces_and_refuses_a_stale_replace(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("rep"))))
    current = get(kubectl, "rep")
    current["spec"]["task"] = "DPO"
    replaced = ok(kubectl("replace", "-f", write(tmp_path, current, "fresh.yaml")))
    assert replaced.stdout.strip() == "trainingruntime.nodus.dev/rep replaced"
    assert get(kubectl, "rep")["spec"]["task"] == "DPO"
    current["spec"]["task"] = "KTO"  # still carries the old resourceVersion
    stale = failed(kubectl("replace", "-f", write(tmp_path, current, "stale.yaml")))
    assert (
        'Operation cannot be fulfilled on trainingruntimes.nodus.dev "rep": the object has been '
        "modified; please apply your changes to the latest version and try again"
    ) in stale.stderr


def test_it_patches_with_merge_and_json_patches(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("pat"))))
    merged = ok(kubectl("patch", "tr", "pat", "--type", "merge", "-p", '{"spec":{"task":"DPO"}}'))
    assert merged.stdout.strip() == "trainingruntime.nodus.dev/pat patched"
    ops = '[{"op":"replace","path":"/spec/launcher","value":"Torchrun"}]'
    ok(kubectl("patch", "tr", "pat", "--type", "json", "-p", ops))
    obj = get(kubectl, "pat")
    assert (obj["spec"]["task"], obj["spec"]["launcher"]) == ("DPO", "Torchrun")
    assert obj["metadata"]["generation"] == 3
    test_op = '[{"op":"test","path":"/spec/task","value":"nope"}]'
    refused = failed(kubectl("patch", "tr", "pat", "--type", "json", "-p", test_op))
    assert "testing value /spec/task failed: test failed" in refused.stderr
    assert ": :" not in refused.stderr  # no empty field name before the message
    label = ok(kubectl("label", "tr", "pat", "tier=gold"))
    assert label.stdout.strip() == "trainingruntime.nodus.dev/pat labeled"
    assert get(kubectl, "pat")["metadata"]["generation"] == 3


def test_it_prints_kubes_error_for_a_strategic_merge_patch(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("smp"))))
    result = failed(kubectl("patch", "tr", "smp", "-p", '{"spec":{"task":"DPO"}}'))
    assert result.stderr.strip() == (
        "error: application/strategic-merge-patch+json is not supported by nodus.dev/v1beta1, "
        "Kind=TrainingRuntime: the body of the request was in an unknown format - accepted "
        "media types include: application/json-patch+json, application/merge-patch+json, "
        "application/apply-patch+yaml"
    )


def test_it_writes_status_only_through_the_status_subresource(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("stat"))))
    patch = '{"status":{"phase":"Ready","observedGeneration":1},"spec":{"task":"DPO"}}'
    ok(kubectl("patch", "tr", "stat", "--type", "merge", "-p", patch))
    main = get(kubectl, "stat")
    assert (main["spec"]["task"], main["status"]["phase"]) == ("DPO", "Pending")
    # Status is the controller's (and platform admins'): alice, the project's admin, is refused.
    as_status = ("patch", "tr", "stat", "--subresource=status", "--type", "merge", "-p", patch)
    assert "(Forbidden)" in failed(kubectl(*as_status)).stderr
    ok(kc("root")(*as_status))
    status = get(kubectl, "stat")
    assert status["spec"]["task"] == "DPO"
    assert status["metadata"]["generation"] == main["metadata"]["generation"]


def test_it_deletes_and_waits_for_finalizers(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("gone"))))
    deleted = ok(kubectl("delete", "tr", "gone"))
    assert deleted.stdout.strip() == 'trainingruntime.nodus.dev "gone" deleted from demo namespace'
    assert "(NotFound)" in failed(kubectl("get", "tr", "gone")).stderr
    held = runtime_manifest("held")
    held["metadata"]["finalizers"] = ["nodus.dev/cleanup"]
    ok(kubectl("create", "-f", write(tmp_path, held)))
    ok(kubectl("delete", "tr", "held", "--wait=false"))
    marked = get(kubectl, "held")
    assert marked["metadata"]["deletionTimestamp"]
    remove = '[{"op":"remove","path":"/metadata/finalizers"}]'
    ok(kubectl("patch", "tr", "held", "--type", "json", "-p", remove))
    assert "(NotFound)" in failed(kubectl("get", "tr", "held")).stderr


def test_it_blocks_a_delete_until_the_last_finalizer_goes(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    held = runtime_manifest("blocked")
    held["metadata"]["finalizers"] = ["nodus.dev/cleanup"]
    ok(kubectl("create", "-f", write(tmp_path, held)))
    deleting = kubectl.start("delete", "tr", "blocked", "--timeout=30s")
    try:
        deadline = time.monotonic() + 15
        while not get(kubectl, "blocked")["metadata"].get("deletionTimestamp"):
            assert time.monotonic() < deadline, "the delete never reached the server"
            time.sleep(0.1)
        time.sleep(0.5)
        assert deleting.poll() is None, "kubectl returned while a finalizer was still there"
        remove = '[{"op":"remove","path":"/metadata/finalizers"}]'
        ok(kubectl("patch", "tr", "blocked", "--type", "json", "-p", remove))
        out, err = deleting.communicate(timeout=20)
    finally:
        if deleting.poll() is None:
            deleting.kill()
    assert deleting.returncode == 0, err
    assert 'trainingruntime.nodus.dev "blocked" deleted' in out


def test_it_explains_fields_from_the_openapi_document(kc: Kc) -> None:
    kubectl = kc()
    gpu = ok(kubectl("explain", "tr.spec.defaults.resources.gpu")).stdout
    assert "KIND:       TrainingRuntime" in gpu
    assert "VERSION:    v1beta1" in gpu
    assert "FIELD: gpu <GPURequest>" in gpu
    for field in ("count", "exact", "interconnect", "minMemory", "type"):
        assert f"  {field}\t" in gpu, field
    recursive = ok(kubectl("explain", "tr", "--recursive")).stdout
    for field in ("spec", "image", "presets", "secondsPerStep", "status", "observedGeneration"):
        assert field in recursive, field
    offerings = ok(kubectl("explain", "accelerators.spec.offerings")).stdout
    assert "KIND:       Accelerator" in offerings
    assert "FIELD: offerings <[]AcceleratorOffering>" in offerings


def test_it_applies_client_side_three_times(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    manifest = runtime_manifest("csa")
    first = ok(kubectl("apply", "-f", write(tmp_path, manifest)))
    assert first.stdout.strip() == "trainingruntime.nodus.dev/csa created"
    annotations = get(kubectl, "csa")["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotations
    manifest["spec"]["task"] = "DPO"
    manifest["metadata"]["labels"]["tier"] = "gold"
    second = ok(kubectl("apply", "-f", write(tmp_path, manifest)))
    assert second.stdout.strip() == "trainingruntime.nodus.dev/csa configured"
    third = ok(kubectl("apply", "-f", write(tmp_path, manifest)))
    assert third.stdout.strip() == "trainingruntime.nodus.dev/csa unchanged"
    obj = get(kubectl, "csa")
    assert obj["spec"]["task"] == "DPO"
    assert obj["metadata"]["labels"]["tier"] == "gold"
    del manifest["metadata"]["labels"]["tier"]
    ok(kubectl("apply", "-f", write(tmp_path, manifest)))
    assert "tier" not in get(kubectl, "csa")["metadata"]["labels"]


def test_it_applies_server_side_with_conflicts_and_force(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    path = write(tmp_path, runtime_manifest("ssa"))
    first = ok(kubectl("apply", "--server-side", "-f", path))
    assert first.stdout.strip() == "trainingruntime.nodus.dev/ssa serverside-applied"
    patch = json.dumps({"spec": {"image": OTHER_IMAGE}})
    ok(kubectl("patch", "tr", "ssa", "--type", "merge", "-p", patch))
    conflict = failed(kubectl("apply", "--server-side", "-f", path))
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl-patch" using nodus.dev/v1beta1: '
        ".spec.image"
    ) in conflict.stderr
    ok(kubectl("apply", "--server-side", "--force-conflicts", "-f", path))
    obj = get(kubectl, "ssa")
    assert obj["spec"]["image"] == runtime_manifest()["spec"]["image"]
    managed = ok(kubectl("get", "tr", "ssa", "--show-managed-fields", "-o", "json")).stdout
    managers = {e["manager"]: e for e in json.loads(managed)["metadata"]["managedFields"]}
    assert managers["kubectl"]["operation"] == "Apply"


def _entries(kubectl: Kubectl, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    shown = ok(kubectl("get", "tr", name, "--show-managed-fields", "-o", "json")).stdout
    entries = json.loads(shown)["metadata"].get("managedFields", [])
    return {(e["manager"], e["operation"]): e for e in entries}


def test_it_moves_from_client_side_to_server_side_apply(kc: Kc, tmp_path: Path) -> None:
    """kubectl upgrades the client-side apply entry to its Apply entry (csaupgrade, a JSON patch
    of managedFields) before applying server-side: no conflict, and kubectl owns the fields."""
    kubectl = kc()
    manifest = runtime_manifest("migrate", launcher="Torchrun")
    ok(kubectl("apply", "-f", write(tmp_path, manifest)))
    assert ("kubectl-client-side-apply", "Update") in _entries(kubectl, "migrate")

    manifest["spec"]["task"] = "DPO"
    manifest["metadata"]["labels"]["tier"] = "gold"
    applied = ok(kubectl("apply", "--server-side", "-f", write(tmp_path, manifest)))
    assert applied.stdout.strip() == "trainingruntime.nodus.dev/migrate serverside-applied"
    entries = _entries(kubectl, "migrate")
    assert ("kubectl-client-side-apply", "Update") not in entries
    owned = entries["kubectl", "Apply"]["fieldsV1"]
    for name in ("f:image", "f:task", "f:command", "f:launcher"):
        assert name in owned["f:spec"], name
    assert {"f:app", "f:tier"} <= set(owned["f:metadata"]["f:labels"])
    obj = get(kubectl, "migrate")
    assert obj["spec"]["task"] == "DPO"
    assert obj["metadata"]["labels"]["tier"] == "gold"

    # kubectl now owns what the manifest had: dropping a field removes it.
    del manifest["spec"]["launcher"]
    del manifest["metadata"]["labels"]["tier"]
    ok(kubectl("apply", "--server-side", "-f", write(tmp_path, manifest)))
    obj = get(kubectl, "migrate")
    assert obj["spec"]["launcher"] == "Plain"  # gone, so defaulted again
    assert "tier" not in obj["metadata"]["labels"]
    assert (
        "f:launcher" not in _entries(kubectl, "migrate")["kubectl", "Apply"]["fieldsV1"]["f:spec"]
    )


def test_it_edits_with_the_users_editor(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("ed"))))
    edited = ok(
        kubectl("edit", "tr", "ed", env={"KUBE_EDITOR": "sed -i s/task:\\ SFT/task:\\ DPO/"})
    )
    assert edited.stdout.strip() == "trainingruntime.nodus.dev/ed edited"
    assert get(kubectl, "ed")["spec"]["task"] == "DPO"


def test_it_runs_server_side_dry_runs_without_storing(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    path = write(tmp_path, runtime_manifest("dry"))
    created = ok(kubectl("create", "--dry-run=server", "-o", "yaml", "-f", path))
    assert yaml.safe_load(created.stdout)["metadata"]["uid"]
    applied = ok(kubectl("apply", "--dry-run=server", "-f", path))
    assert applied.stdout.strip() == "trainingruntime.nodus.dev/dry created (server dry run)"
    assert "(NotFound)" in failed(kubectl("get", "tr", "dry")).stderr
    ok(kubectl("create", "-f", path))
    ok(kubectl("delete", "tr", "dry", "--dry-run=server"))
    assert get(kubectl, "dry")["metadata"]["name"] == "dry"


def test_it_validates_unknown_fields_as_asked(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    manifest = runtime_manifest("val")
    manifest["spec"]["foo"] = 1
    path = write(tmp_path, manifest)
    strict = failed(kubectl("create", "--validate=strict", "-f", path))
    assert 'strict decoding error: unknown field "spec.foo"' in strict.stderr
    warn = ok(kubectl("create", "--validate=warn", "-f", path))
    assert 'Warning: unknown field "spec.foo"' in warn.stderr
    assert "foo" not in get(kubectl, "val")["spec"]
    ok(kubectl("delete", "tr", "val"))
    quiet = ok(kubectl("create", "--validate=false", "-f", path))
    assert "unknown field" not in quiet.stderr


def test_it_reports_validation_errors_with_their_fields(kc: Kc, tmp_path: Path) -> None:
    manifest = runtime_manifest("inv", launcher="Slurm")
    result = failed(kc()("apply", "-f", write(tmp_path, manifest)))
    # kubectl rebuilds the message from details.kind, details.name and the causes.
    assert result.stderr.startswith(
        'The TrainingRuntime "inv" is invalid: spec.launcher: Unsupported value: "Slurm": '
        'supported values: "Plain", "Torchrun", "Accelerate", "Deepspeed"'
    )


def test_it_lists_the_accelerator_catalog(kc: Kc) -> None:
    lines = ok(kc()("get", "accelerators")).stdout.splitlines()
    assert lines[0].split()[:2] == ["NAME", "FAMILY"]
    assert any(line.startswith("h100-80g-sxm ") for line in lines)


def test_it_names_a_missing_runtime_and_a_missing_project(kc: Kc) -> None:
    missing = failed(kc()("get", "tr", "missing", "-n", "demo"))
    assert missing.stderr.strip() == (
        'Error from server (NotFound): trainingruntimes.nodus.dev "missing" not found'
    )
    nope = failed(kc()("get", "tr", "x", "-n", "nope"))
    assert nope.stderr.strip() == 'Error from server (NotFound): namespaces "nope" not found'


def test_it_refuses_viewers_and_outsiders_as_kube_would(kc: Kc, tmp_path: Path) -> None:
    path = write(tmp_path, runtime_manifest("viewer"))
    bob = failed(kc("bob")("create", "-f", path))
    assert (
        'trainingruntimes.nodus.dev is forbidden: User "bob" cannot create resource '
        '"trainingruntimes" in API group "nodus.dev" in the namespace "demo"'
    ) in bob.stderr
    charlie = failed(kc("charlie")("get", "tr"))
    assert "(Forbidden)" in charlie.stderr
    assert ok(kc("charlie", "nodus")("get", "tr")).ok


def test_it_asks_kubectl_without_a_token_for_credentials(kc: Kc) -> None:
    # A 401 to a kubeconfig without credentials makes kubectl prompt for basic auth.
    result = failed(kc(None)("get", "tr", stdin=""))
    assert "Please enter Username" in result.stdout


def test_it_creates_from_generate_name(kc: Kc, tmp_path: Path) -> None:
    manifest = runtime_manifest()
    manifest["metadata"] = {"generateName": "gen-"}
    result = ok(kc()("create", "-f", write(tmp_path, manifest)))
    assert result.stdout.startswith("trainingruntime.nodus.dev/gen-")


def test_it_logs_every_kubectl_request_with_its_request_id(
    daphne_server: LiveServer,
) -> None:
    with daphne_server.client("alice") as client:
        response = client.get("/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes/nope")
    request_id = response.headers["X-Request-Id"]
    assert response.json()["requestId"] == request_id
    assert f"requestId={request_id}" in daphne_server.log()
    assert httpx.get(f"{daphne_server.url}/version").status_code == 200


def test_auth_whoami_names_the_caller(kc: Kc) -> None:
    table = ok(kc()("auth", "whoami")).stdout
    assert re.search(r"^Username\s+alice$", table, re.M), table
    review = json.loads(ok(kc("root")("auth", "whoami", "-o", "json")).stdout)
    assert review["status"]["userInfo"]["username"] == "root"
    assert "nodus:platform-admins" in review["status"]["userInfo"]["groups"]


def test_auth_can_i_list_shows_what_the_role_allows(kc: Kc) -> None:
    listed = ok(kc("bob")("auth", "can-i", "--list", "-n", "demo")).stdout
    line = next(x for x in listed.splitlines() if x.startswith("trainingruntimes.nodus.dev "))
    assert line.split()[-3:] == ["[list", "watch", "get]"], listed
    status = next(x for x in listed.splitlines() if x.startswith("trainingruntimes.nodus.dev/st"))
    assert status.split()[-1] == "[get]", listed  # status is written by the controller alone


def test_it_gets_the_projects_as_namespaces(kc: Kc) -> None:
    table = ok(kc()("get", "ns")).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "AGE"]
    rows = {line.split()[0]: line.split()[1] for line in table[1:]}
    # alice is a member of demo; everyone reads the managed project; no other project shows.
    assert rows == {"demo": "Active", "nodus": "Active"}
    assert re.search(r"^Status:\s+Active$", ok(kc()("describe", "ns", "demo")).stdout, re.M)
    one = json.loads(ok(kc()("get", "ns", "demo", "-o", "json")).stdout)
    assert one["kind"] == "Namespace"
    assert one["status"]["phase"] == "Active"
    refused = failed(kc()("create", "ns", "mine"))
    assert "(MethodNotAllowed)" in refused.stderr
    assert "the server does not allow this method on the requested resource" in refused.stderr
    assert "mine" not in ok(kc("root")("get", "ns")).stdout


def test_it_gets_all_with_the_runtimes_in_the_category(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("in-all"))))
    result = ok(kubectl("get", "all", "-n", "demo"))
    # kubectl prefixes names with their kind only when several kinds have objects to show.
    names = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    assert {"in-all", "trainingruntime.nodus.dev/in-all"} & set(names), result.stdout
    assert result.stderr == ""


def test_it_lists_the_core_resources_beside_ours(kc: Kc) -> None:
    result = ok(kc()("api-resources"))
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    served = {(row[0], row[2]): row for row in rows}
    # Events in both groups that serve them on kube-apiserver, namespaces in core.
    assert served["events", "v1"][1:5] == ["ev", "v1", "true", "Event"]
    assert served["events", "events.k8s.io/v1"][4] == "Event"
    assert served["namespaces", "v1"][1:5] == ["ns", "v1", "false", "Namespace"]
    assert served["trainingruntimes", "nodus.dev/v1beta1"][1] == "tr"
    assert result.stderr == ""


def test_it_describes_a_runtime_with_the_controllers_events(
    kc: Kc, tmp_path: Path, daphne_server: LiveServer
) -> None:
    from tests.support.manage import manage

    kubectl = kc()
    ok(kubectl("create", "-f", write(tmp_path, runtime_manifest("described"))))
    # The live server runs no controller of its own: one pass, as `runcontroller --once`.
    manage(daphne_server, "runcontroller", "--once")
    described = ok(kubectl("describe", "tr", "described")).stdout
    events = described[described.index("Events:") :].splitlines()
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    row = next(line for line in events[3:] if "Warning" in line)
    # The live server allows no registry, so the verdict is RegistryRefused.
    assert "RegistryRefused" in row
    assert "is not on the allow-list" in row
    assert "nodus.dev/runtime-controller" in row
    listed = ok(kubectl("get", "events", "--field-selector", "involvedObject.name=described"))
    assert listed.stdout.splitlines()[0].split() == [
        "LAST",
        "SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "MESSAGE",
    ]
    assert "trainingruntime/described" in listed.stdout
    assert "RegistryRefused" in ok(kubectl("events", "--for", "tr/described")).stdout
    # A watch of the core collection starts with the events there, then ends on its timeout.
    with daphne_server.client("alice") as client:
        watched = client.get(
            "/api/v1/namespaces/demo/events",
            params={"watch": "1", "timeoutSeconds": "1", "fieldSelector": "reason=RegistryRefused"},
        )
    lines = [json.loads(line) for line in watched.text.splitlines()]
    assert {(e["type"], e["object"]["involvedObject"]["name"]) for e in lines} >= {
        ("ADDED", "described")
    }
    # Events are the controller's: nobody writes them through the API.
    refused = failed(kubectl("delete", "events", "--all"))
    assert "(MethodNotAllowed)" in refused.stderr


def test_it_prunes_what_the_label_selects(kc: Kc, tmp_path: Path) -> None:
    kubectl = kc()
    folder = tmp_path / "manifests"
    folder.mkdir()
    for name in ("keep", "drop"):
        manifest = runtime_manifest(f"prune-{name}")
        manifest["metadata"]["labels"] = {"app": "pruned"}
        write(folder, manifest, f"{name}.yaml")
    ok(kubectl("apply", "-l", "app=pruned", "-f", str(folder)))
    (folder / "drop.yaml").unlink()
    allowlist = "--prune-allowlist=nodus.dev/v1beta1/TrainingRuntime"
    pruned = ok(kubectl("apply", "--prune", "-l", "app=pruned", allowlist, "-f", str(folder)))
    assert "trainingruntime.nodus.dev/prune-drop pruned" in pruned.stdout
    assert "NotFound" in failed(kubectl("get", "tr", "prune-drop")).stderr
    assert "prune-keep" in ok(kubectl("get", "tr", "-l", "app=pruned")).stdout


def test_it_warns_about_a_missing_estimate_once_per_change_not_on_a_label(
    kc: Kc, tmp_path: Path
) -> None:
    kubectl = kc()
    # The H100 family reaches h100-94g, which the estimate has no time for.
    manifest = runtime_manifest(
        "warned",
        requires={"data": True},
        defaults={"resources": {"gpu": {"type": ["H100"], "count": 2}}},
        estimate={"secondsPerStep": {"h100-80g": 0.5}},
    )
    created = ok(kubectl("create", "-f", write(tmp_path, manifest)))
    assert "h100-94g" in created.stderr
    labelled = ok(kubectl("label", "tr", "warned", "team=vision"))
    assert "Warning" not in labelled.stderr, labelled.stderr
    imaged = ok(
        kubectl(
            "patch",
            "tr",
            "warned",
            "--type=merge",
            "-p",
            '{"spec": {"image": "' + OTHER_IMAGE + '"}}',
        )
    )
    assert "Warning" not in imaged.stderr, imaged.stderr
    # A change to the estimate is a change that causes it: the warning is said again.
    patch = '{"spec": {"estimate": {"secondsPerStep": {"a100-80g": 1.2}}}}'
    retimed = ok(kubectl("patch", "tr", "warned", "--type=merge", "-p", patch))
    assert "Warning: spec.defaults.resources.gpu.type" in retimed.stderr
    assert "h100-94g" in retimed.stderr
