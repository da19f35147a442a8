"""Requests a real kube-apiserver refuses or answers otherwise, answered as it does.

Each case came from sending the same request to nodus and to kube-apiserver 1.35 serving
TrainingRuntime as a CRD; the expected codes, reasons and messages are
kube's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from runtimes.storage.models import StoredObject
from tests.support.api import GV, ApiClient, runtime_manifest

TRS = f"{GV}/namespaces/demo/trainingruntimes"


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def created(client: ApiClient, name: str = "sft-demo") -> dict:
    response = client.post(TRS, runtime_manifest(name))
    assert response.status_code == 201, response.json_body
    return response.json_body


def test_options_is_405_as_in_kube_not_drf_metadata(alice: ApiClient) -> None:
    created(alice)
    for path in (TRS, f"{TRS}/sft-demo"):
        response = alice.request("OPTIONS", path)
        assert response.status_code == 405, path
        assert response.json_body["reason"] == "MethodNotAllowed"
        assert response.json_body["message"] == (
            'options is not supported on resources of kind "trainingruntimes.nodus.dev"'
        )
        assert "OPTIONS" not in response["Allow"]


@pytest.mark.parametrize(
    ("query", "agent", "indented"),
    [
        ("?pretty=true", "kubectl/v1.35.0", True),
        ("?pretty=1", "", True),
        ("?pretty=false", "curl/8.5.0", False),
        ("", "curl/8.5.0", True),
        ("", "Mozilla/5.0 (X11; Linux x86_64)", True),
        ("", "python-httpx/0.28", False),
    ],
)
def test_pretty_output_follows_kubes_rule(
    alice: ApiClient, query: str, agent: str, indented: bool
) -> None:
    created(alice)
    for path in (TRS, f"{TRS}/sft-demo"):
        response = alice.get(path + query, **({"User-Agent": agent} if agent else {}))
        assert response.status_code == 200
        assert response.content.startswith(b'{\n  "') is indented, (path, query, agent)


def test_removing_the_last_finalizer_answers_the_object(alice: ApiClient) -> None:
    created(alice)
    alice.patch(f"{TRS}/sft-demo", {"metadata": {"finalizers": ["nodus.dev/hold"]}})
    assert alice.delete(f"{TRS}/sft-demo").status_code == 200
    released = alice.patch(f"{TRS}/sft-demo", {"metadata": {"finalizers": None}})
    assert released.status_code == 200
    assert released.json_body["kind"] == "TrainingRuntime"
    assert released.json_body["metadata"]["name"] == "sft-demo"
    assert alice.get(f"{TRS}/sft-demo").status_code == 404


def test_orphan_dependents_and_a_propagation_policy_together_are_invalid(
    alice: ApiClient,
) -> None:
    created(alice)
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": True}
    response = alice.delete(f"{TRS}/sft-demo", {**body, "propagationPolicy": "Orphan"})
    assert response.status_code == 422
    cause = response.json_body["details"]["causes"][0]
    assert cause["field"] == "propagationPolicy"
    assert "orphanDependents and deletionPropagation cannot be both set" in cause["message"]
    assert alice.get(f"{TRS}/sft-demo").status_code == 200


@pytest.mark.parametrize(
    ("owner", "field", "message"),
    [
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": ""},
            "metadata.ownerReferences.uid",
            "uid must not be empty",
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "", "uid": "u-1"},
            "metadata.ownerReferences.name",
            "name must not be empty",
        ),
        (
            {"apiVersion": "apps/", "kind": "Deployment", "name": "d", "uid": "u-1"},
            "metadata.ownerReferences.apiVersion",
            "version must not be empty",
        ),
    ],
)
def test_owner_references_need_every_field(
    alice: ApiClient, owner: dict, field: str, message: str
) -> None:
    body = runtime_manifest()
    body["metadata"]["ownerReferences"] = [owner]
    response = alice.post(TRS, body)
    assert response.status_code == 422, response.json_body
    causes = response.json_body["details"]["causes"]
    assert any(c["field"] == field and message in c["message"] for c in causes), causes
    assert not StoredObject.objects.filter(name="sft-demo").exists()


def test_only_one_owner_may_be_the_controller(alice: ApiClient) -> None:
    body = runtime_manifest()
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "uid": "u-1", "controller": True}
    body["metadata"]["ownerReferences"] = [{**owner, "name": "a"}, {**owner, "name": "b"}]
    response = alice.post(TRS, body)
    assert response.status_code == 422
    assert "Only one reference can have Controller set to true" in response.json_body["message"]


@pytest.mark.parametrize("missing", ["kind", "apiVersion"])
def test_a_whole_body_without_its_type_is_400(alice: ApiClient, missing: str) -> None:
    body = runtime_manifest()
    del body[missing]
    label = "Kind" if missing == "kind" else "apiVersion"
    posted = alice.post(TRS, body)
    assert posted.status_code == 400
    assert posted.json_body["message"].startswith(f"Object '{label}' is missing in '{{")
    created(alice)
    for response in (
        alice.put(f"{TRS}/sft-demo", body),
        alice.patch(f"{TRS}/sft-demo?fieldManager=me", body, "application/apply-patch+yaml"),
    ):
        assert response.status_code == 400
        assert response.json_body["message"].startswith(f"Object '{label}' is missing")


def test_a_put_must_name_its_object(alice: ApiClient) -> None:
    current = created(alice)
    del current["metadata"]["name"]
    response = alice.put(f"{TRS}/sft-demo", current)
    assert response.status_code == 400
    assert response.json_body["message"] == (
        "the name of the object () does not match the name on the URL (sft-demo)"
    )


def test_a_create_must_not_carry_a_resource_version(alice: ApiClient) -> None:
    body = runtime_manifest()
    body["metadata"]["resourceVersion"] = "12"
    response = alice.post(TRS, body)
    assert response.status_code == 400
    assert response.json_body["message"] == (
        "resourceVersion should not be set on objects to be created"
    )
    assert not StoredObject.objects.filter(name="sft-demo").exists()


def test_yaml_is_served_when_accept_asks_for_it_first(alice: ApiClient) -> None:
    made = created(alice)
    for path, expected in ((f"{TRS}/sft-demo", made), (TRS, None)):
        response = alice.get(path, Accept="application/yaml")
        assert response.status_code == 200
        assert response["Content-Type"] == "application/yaml"
        decoded = yaml.safe_load(response.content)
        if expected is not None:
            assert decoded == expected
        else:
            assert decoded["kind"] == "TrainingRuntimeList"
            assert decoded["items"] == [made]
    assert alice.get(TRS, Accept="application/json, application/yaml").json_body["items"]
    # (a watch asking for YAML is 406: tests/api/test_api_watch.py, on a live server)


def test_a_put_naming_another_uid_is_a_failed_precondition(alice: ApiClient) -> None:
    current = created(alice)
    uid = current["metadata"]["uid"]
    current["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    response = alice.put(f"{TRS}/sft-demo", current)
    assert response.status_code == 409
    assert response.json_body["reason"] == "Conflict"
    assert response.json_body["message"].endswith(
        "Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, "
        f"UID in object meta: {uid}"
    )


def test_a_json_patch_that_is_not_an_array_is_400(alice: ApiClient) -> None:
    created(alice)
    response = alice.patch(f"{TRS}/sft-demo", {"op": "add"}, "application/json-patch+json")
    assert response.status_code == 400
    assert response.json_body["message"] == (
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    )


def test_an_empty_create_is_400(alice: ApiClient) -> None:
    response = alice.request("POST", TRS, b"")
    assert response.status_code == 400
    assert response.json_body["message"].startswith("Object 'Kind' is missing in")


def test_a_get_checks_its_resource_version(alice: ApiClient) -> None:
    made = created(alice)
    bad = alice.get(f"{TRS}/sft-demo?resourceVersion=abc")
    assert bad.status_code == 400
    assert "invalid resource version" in bad.json_body["message"]
    at = made["metadata"]["resourceVersion"]
    assert alice.get(f"{TRS}/sft-demo?resourceVersion={at}").json_body == made
    assert alice.get(f"{TRS}/sft-demo?resourceVersion=0").json_body == made


def test_self_subject_review_says_who_the_caller_is(
    api: Callable[[str | None], ApiClient],
) -> None:
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    alice = api("alice").post(path, body)
    assert alice.status_code == 201
    assert alice.json_body["kind"] == "SelfSubjectReview"
    info = alice.json_body["status"]["userInfo"]
    assert info["username"] == "alice"
    assert info["groups"] == ["system:authenticated"]
    root = api("root").post(path, body).json_body["status"]["userInfo"]
    assert root["groups"] == ["system:authenticated", "nodus:platform-admins"]
    assert api(None).post(path, body).status_code == 401


def rules_in(client: ApiClient, namespace: str) -> dict[str, list[str]]:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    answer = client.post("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", review)
    assert answer.status_code == 201, answer.json_body
    assert answer.json_body["status"]["incomplete"] is False
    return {
        resource: rule["verbs"]
        for rule in answer.json_body["status"]["resourceRules"]
        if rule["apiGroups"] == ["nodus.dev"]
        for resource in rule["resources"]
    }


def test_self_subject_rules_review_lists_what_each_role_may_do(
    api: Callable[[str | None], ApiClient],
) -> None:
    """The same answers SelfSubjectAccessReview gives one at a time (kubectl auth can-i
    --list): an admin of demo writes its runtimes but not their status; a viewer reads; a
    stranger reads only the cluster-wide catalog of accelerators."""
    alice = rules_in(api("alice"), "demo")
    assert set(alice["trainingruntimes"]) == {
        "list",
        "watch",
        "create",
        "deletecollection",
        "get",
        "update",
        "patch",
        "delete",
    }
    assert alice["trainingruntimes/status"] == ["get"]
    assert set(rules_in(api("bob"), "demo")["trainingruntimes"]) == {"list", "watch", "get"}
    charlie = rules_in(api("charlie"), "demo")
    assert "trainingruntimes" not in charlie
    assert set(charlie["accelerators"]) == {"list", "watch", "get"}
    assert "patch" in rules_in(api("root"), "demo")["trainingruntimes/status"]
