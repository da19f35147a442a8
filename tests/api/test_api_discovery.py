"""Discovery as kubectl reads it: /version, /api, /apis (aggregated and legacy), the group and
the group-version (docs/kube-compatibility.md, coverage items 1-5)."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.api import GV, ApiClient

pytestmark = pytest.mark.django_db

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)
AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def content_type_params(value: str) -> tuple[str, set[str]]:
    base, *params = [p.strip() for p in value.split(";")]
    return base, set(params)


def test_it_reports_a_semver_version_within_kubectls_skew(
    api: Callable[[str | None], ApiClient],
) -> None:
    # /version is public, as kube-apiserver's system:public-info-viewer makes it.
    body = api(None).get("/version").json_body
    assert body["major"] == "1"
    assert 34 <= int(body["minor"]) <= 36
    assert body["gitVersion"].startswith(f"v1.{body['minor']}.")
    for key in ("gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"):
        assert body[key]


def test_it_reports_the_emulated_version_and_the_oldest_compatible_one_as_kube_1_35(
    api: Callable[[str | None], ApiClient],
) -> None:
    body = api(None).get("/version").json_body
    # Emulating its own release, and compatible back to the one before it (kube's defaults).
    assert (body["emulationMajor"], body["emulationMinor"]) == (body["major"], body["minor"])
    assert body["minCompatibilityMajor"] == body["major"]
    assert int(body["minCompatibilityMinor"]) == int(body["minor"]) - 1


def test_it_answers_aggregated_discovery_with_the_content_type_client_go_checks(
    alice: ApiClient,
) -> None:
    response = alice.get("/apis", Accept=AGGREGATED_ACCEPT)
    assert content_type_params(response["Content-Type"]) == content_type_params(AGGREGATED_TYPE)
    body = response.json_body
    assert body["kind"] == "APIGroupDiscoveryList"
    assert body["apiVersion"] == "apidiscovery.k8s.io/v2"
    # Our group, then authorization.k8s.io for `kubectl auth can-i`'s access reviews, then
    # events.k8s.io (the core Events in the newer shape).
    group, authz, events = body["items"]
    assert events["metadata"]["name"] == "events.k8s.io"
    assert group["metadata"]["name"] == "nodus.dev"
    assert authz["metadata"]["name"] == "authorization.k8s.io"
    reviews = authz["versions"][0]["resources"]
    names = [r["resource"] for r in reviews]
    assert names == ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]
    assert [r["verbs"] for r in reviews] == [["create"], ["create"]]
    [version] = group["versions"]
    assert version["version"] == "v1beta1"
    assert version["freshness"] == "Current"
    resources = {r["resource"]: r for r in version["resources"]}
    runtimes = resources["trainingruntimes"]
    assert runtimes["singularResource"] == "trainingruntime"
    assert runtimes["scope"] == "Namespaced"
    assert runtimes["responseKind"] == {
        "group": "nodus.dev",
        "version": "v1beta1",
        "kind": "TrainingRuntime",
    }
    assert runtimes["verbs"] == VERBS
    assert runtimes["shortNames"] == ["tr"]
    assert runtimes["categories"] == ["nodus", "all"]
    subresources = {s["subresource"]: s for s in runtimes["subresources"]}
    assert subresources["status"]["verbs"] == ["get", "patch", "update"]
    assert subresources["compile"]["verbs"] == ["create"]
    assert resources["accelerators"]["scope"] == "Cluster"
    assert resources["accelerators"]["verbs"] == ["get", "list", "watch"]
    assert "storageVersionHash" not in runtimes


def test_it_answers_the_aggregated_core_group_with_events_and_namespaces(alice: ApiClient) -> None:
    response = alice.get("/api", Accept=AGGREGATED_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json;")
    [core] = response.json_body["items"]
    assert core["metadata"].get("name", "") == ""  # the core group has no name
    [version] = core["versions"]
    assert version["version"] == "v1"
    assert version["freshness"] == "Current"
    resources = {r["resource"]: r for r in version["resources"]}
    assert sorted(resources) == ["events", "namespaces"]
    events = resources["events"]
    assert events["scope"] == "Namespaced"
    assert events["singularResource"] == "event"
    assert events["shortNames"] == ["ev"]
    assert events["responseKind"] == {"group": "", "version": "", "kind": "Event"}
    assert set(events["verbs"]) == {"get", "list", "watch"}
    namespaces = resources["namespaces"]
    assert namespaces["scope"] == "Cluster"
    assert namespaces["shortNames"] == ["ns"]
    assert namespaces["verbs"] == ["get", "list"]
    # /apis holds every other group, never the core one.
    groups = alice.get("/apis", Accept=AGGREGATED_ACCEPT).json_body["items"]
    assert all(g["metadata"].get("name") for g in groups)


def test_it_lists_the_core_group_version(alice: ApiClient) -> None:
    body = alice.get("/api/v1").json_body
    assert body["kind"] == "APIResourceList"
    assert body["groupVersion"] == "v1"
    resources = {r["name"]: r for r in body["resources"]}
    assert resources["events"]["kind"] == "Event"
    assert resources["events"]["namespaced"] is True
    assert resources["namespaces"]["kind"] == "Namespace"
    assert resources["namespaces"]["namespaced"] is False
    assert "trainingruntimes" not in resources


def test_it_answers_legacy_discovery_to_plain_json(alice: ApiClient) -> None:
    core = alice.get("/api", Accept="application/json")
    assert core["Content-Type"] == "application/json"
    assert core.json_body["kind"] == "APIVersions"
    assert core.json_body["versions"] == ["v1"]
    [address] = core.json_body["serverAddressByClientCIDRs"]
    assert address["clientCIDR"] == "0.0.0.0/0"
    groups = alice.get("/apis", Accept="application/json").json_body
    version = {"groupVersion": "nodus.dev/v1beta1", "version": "v1beta1"}
    authz = {"groupVersion": "authorization.k8s.io/v1", "version": "v1"}
    events = {"groupVersion": "events.k8s.io/v1", "version": "v1"}
    assert groups == {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {"name": "nodus.dev", "versions": [version], "preferredVersion": version},
            {"name": "authorization.k8s.io", "versions": [authz], "preferredVersion": authz},
            {"name": "events.k8s.io", "versions": [events], "preferredVersion": events},
        ],
    }
    group = alice.get("/apis/nodus.dev").json_body
    assert group == {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "nodus.dev",
        "versions": [version],
        "preferredVersion": version,
    }


def test_it_lists_the_group_versions_resources_with_the_storage_version_hash(
    alice: ApiClient,
) -> None:
    body = alice.get(GV).json_body
    assert body["kind"] == "APIResourceList"
    assert body["groupVersion"] == "nodus.dev/v1beta1"
    resources: dict[str, dict[str, Any]] = {r["name"]: r for r in body["resources"]}
    runtimes = resources["trainingruntimes"]
    assert runtimes == {
        "name": "trainingruntimes",
        "singularName": "trainingruntime",
        "namespaced": True,
        "kind": "TrainingRuntime",
        "verbs": VERBS,
        "shortNames": ["tr"],
        "categories": ["nodus", "all"],
        "storageVersionHash": "bZ1YSKk/n1Q=",
    }
    # The documented value is exactly apiserver's formula.
    digest = hashlib.sha256(b"nodus.dev/v1beta1/TrainingRuntime").digest()[:8]
    assert runtimes["storageVersionHash"] == base64.b64encode(digest).decode()
    assert resources["trainingruntimes/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["trainingruntimes/status"]["kind"] == "TrainingRuntime"
    assert resources["trainingruntimes/compile"]["verbs"] == ["create"]
    assert resources["accelerators"]["namespaced"] is False


def test_it_asks_for_credentials_before_discovery(api: Callable[[str | None], ApiClient]) -> None:
    for path in ("/api", "/apis", GV):
        assert api(None).get(path).status_code == 401
