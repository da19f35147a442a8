"""SelfSubjectAccessReview: what `kubectl auth can-i` asks, answered from the endpoint
declarations (alice admins demo, bob views it, charlie is an outsider, root a platform admin)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.api import ApiClient
from tests.support.protobuf import envelope, field

pytestmark = pytest.mark.django_db

REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def review(client: ApiClient, **attributes: str) -> Any:
    body = {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": {"resourceAttributes": {"group": "nodus.dev", **attributes}},
        "status": {"allowed": False},
    }
    return client.post(REVIEWS, body)


def allowed(client: ApiClient, **attributes: str) -> bool:
    response = review(client, **attributes)
    assert response.status_code == 201, response.json_body
    assert response.json_body["kind"] == "SelfSubjectAccessReview"
    value: bool = response.json_body["status"]["allowed"]
    return value


STATUS = {"verb": "patch", "resource": "trainingruntimes", "subresource": "status"}


@pytest.mark.parametrize(
    ("who", "expected"), [("alice", False), ("bob", False), ("charlie", False), ("root", True)]
)
def test_it_says_only_platform_admins_may_write_status(
    api: Callable[[str | None], ApiClient], who: str, expected: bool
) -> None:
    assert allowed(api(who), namespace="demo", **STATUS) is expected
    assert allowed(api(who), namespace="demo", **{**STATUS, "verb": "update"}) is expected


def test_it_answers_every_verb_as_the_endpoints_would(
    api: Callable[[str | None], ApiClient],
) -> None:
    alice, bob = api("alice"), api("bob")
    runtimes = {"resource": "trainingruntimes", "namespace": "demo"}
    for verb in ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"):
        assert allowed(alice, verb=verb, **runtimes), verb
    assert allowed(bob, verb="watch", **runtimes)
    assert not allowed(bob, verb="delete", **runtimes)
    assert allowed(bob, verb="get", subresource="status", **runtimes)
    # Compiling is a read: whoever may get the runtime may create a compile.
    assert allowed(bob, verb="create", subresource="compile", **runtimes)
    assert not allowed(api("charlie"), verb="get", **runtimes)
    assert allowed(api("charlie"), verb="list", resource="trainingruntimes", namespace="nodus")
    assert not allowed(alice, verb="create", resource="trainingruntimes", namespace="nodus")
    # The accelerator catalog is read-only for everyone, platform admins included.
    assert allowed(alice, verb="list", resource="accelerators")
    assert not allowed(api("root"), verb="update", resource="accelerators", name="a100")


def test_it_says_no_to_what_the_server_does_not_serve(
    api: Callable[[str | None], ApiClient],
) -> None:
    root = api("root")
    assert not allowed(root, verb="get", resource="pods", namespace="demo")
    assert not allowed(root, verb="get", resource="trainingruntimes", group="apps")
    assert not allowed(root, verb="delete", resource="trainingruntimes", subresource="status")
    assert not allowed(root, verb="get", resource="trainingruntimes", subresource="logs")
    assert not allowed(root, verb="get", resource="accelerators", subresource="status")


def test_it_answers_non_resource_paths_from_their_views_declarations(
    api: Callable[[str | None], ApiClient],
) -> None:
    def path_allowed(client: ApiClient, path: str, verb: str = "get") -> bool:
        body = {"spec": {"nonResourceAttributes": {"path": path, "verb": verb}}}
        response = client.post(REVIEWS, body)
        assert response.status_code == 201, response.json_body
        value: bool = response.json_body["status"]["allowed"]
        return value

    bob = api("bob")
    assert path_allowed(bob, "/livez")
    assert path_allowed(bob, "/healthz")
    assert path_allowed(bob, "/apis")
    assert path_allowed(bob, "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes")
    assert not path_allowed(bob, "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes", "post")
    assert not path_allowed(
        api("charlie"), "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"
    )


def test_it_asks_for_credentials_and_a_question(api: Callable[[str | None], ApiClient]) -> None:
    anonymous = review(api(None), **STATUS)
    assert anonymous.status_code == 401
    assert anonymous.json_body["reason"] == "Unauthorized"
    empty = api("alice").post(REVIEWS, {"spec": {}})
    assert empty.status_code == 400
    assert empty.json_body["kind"] == "Status"
    wrong = api("alice").post(REVIEWS, {"kind": "Pod", "apiVersion": "v1", "spec": {}})
    assert wrong.status_code == 400


def test_it_echoes_the_question_with_the_answer(api: Callable[[str | None], ApiClient]) -> None:
    response = review(api("root"), namespace="demo", name="x", **STATUS)
    assert response.status_code == 201
    body = response.json_body
    assert body["apiVersion"] == "authorization.k8s.io/v1"
    assert body["spec"]["resourceAttributes"] == {
        "group": "nodus.dev",
        "namespace": "demo",
        "name": "x",
        **STATUS,
    }
    assert body["status"] == {"allowed": True}


def test_it_reads_the_review_as_kubectl_sends_it_in_protobuf(
    api: Callable[[str | None], ApiClient],
) -> None:
    # SelfSubjectAccessReview{spec{resourceAttributes{namespace, verb, group, resource, sub}}}
    attributes = (
        field(1, b"demo")
        + field(2, b"patch")
        + field(3, b"nodus.dev")
        + field(5, b"trainingruntimes")
        + field(6, b"status")
    )
    body = envelope(field(1, b"") + field(2, field(1, attributes)) + field(3, b""))
    protobuf = "application/vnd.kubernetes.protobuf"
    for who, expected in (("alice", False), ("root", True)):
        response = api(who).post(
            REVIEWS, body, content_type=protobuf, Accept=f"{protobuf},application/json"
        )
        assert response.status_code == 201, response.content
        assert response["Content-Type"].startswith("application/json")
        assert response.json_body["spec"]["resourceAttributes"]["subresource"] == "status"
        assert response.json_body["status"] == {"allowed": expected}
    garbled = api("alice").post(REVIEWS, b"k8s\x00\x0a\xff", content_type=protobuf)
    assert garbled.status_code == 400
    assert garbled.json_body["reason"] == "BadRequest"
