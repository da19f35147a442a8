"""Paths and methods answered as a custom resource's handler answers them, beyond the
conformance sequences: who is refused before a route's own answer, what is left unchanged, and
discovery with trailing slashes (tests/conformance/test_http.py and test_objects.py hold kube's
answers themselves)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runtimes.storage.models import Project, StoredObject
from tests.support.api import GV, ApiClient, runtime_manifest

pytestmark = pytest.mark.django_db

TRS = f"{GV}/namespaces/demo/trainingruntimes"


def test_discovery_answers_the_same_with_a_trailing_slash(
    api: Callable[[str | None], ApiClient],
) -> None:
    alice = api("alice")
    for path in ("/api", "/api/v1", "/apis", "/apis/nodus.dev", GV):
        plain, slashed = alice.get(path), alice.get(path + "/")
        assert (plain.status_code, slashed.status_code) == (200, 200), path
        assert slashed.json_body == plain.json_body, path


def test_a_viewer_may_not_create_through_an_object_path(
    api: Callable[[str | None], ApiClient],
) -> None:
    refused = api("bob").post(f"{TRS}/x", runtime_manifest("x"))
    assert refused.status_code == 403
    assert refused.json_body["message"] == (
        'trainingruntimes.nodus.dev "x" is forbidden: User "bob" cannot create resource '
        '"trainingruntimes" in API group "nodus.dev" in the namespace "demo"'
    )
    assert not StoredObject.objects.exists()


def test_a_create_through_an_object_path_is_a_create_like_any_other(
    api: Callable[[str | None], ApiClient],
) -> None:
    alice = api("alice")
    dry = alice.post(f"{TRS}/x?dryRun=All", runtime_manifest("x"))
    assert dry.status_code == 201
    assert not StoredObject.objects.exists()
    elsewhere = alice.post(f"{TRS}/x", runtime_manifest("x", namespace="nodus"))
    assert elsewhere.status_code == 400
    assert elsewhere.json_body["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    made = alice.post(f"{TRS}/x", runtime_manifest("x"))
    assert made.status_code == 201
    assert made.json_body["metadata"]["managedFields"][0]["operation"] == "Update"
    assert alice.get(f"{TRS}/x").json_body["metadata"]["uid"] == made.json_body["metadata"]["uid"]


def test_a_platform_admin_deletes_no_collection_without_a_project(
    api: Callable[[str | None], ApiClient],
) -> None:
    root = api("root")
    Project.objects.create(name="other")
    assert root.post(TRS, runtime_manifest("a")).status_code == 201
    assert (
        root.post(f"{GV}/namespaces/other/trainingruntimes", runtime_manifest("b")).status_code
        == 201
    )
    refused = root.delete(f"{GV}/trainingruntimes")
    assert refused.status_code == 404
    assert refused.json_body["reason"] == "NotFound"
    listed = root.get(f"{GV}/trainingruntimes").json_body["items"]
    assert {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in listed} == {
        ("demo", "a"),
        ("other", "b"),
    }
