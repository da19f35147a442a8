"""`/openapi/v3` and the group-version document as kube-openapi serves them."""

from __future__ import annotations

import email.utils
import hashlib
import time
from collections.abc import Callable

import orjson
import pytest

from tests.support.api import ApiClient

pytestmark = pytest.mark.django_db

GV_DOC = "/openapi/v3/apis/nodus.dev/v1beta1"


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def current_url(client: ApiClient) -> str:
    index = client.get("/openapi/v3")
    assert index.status_code == 200
    url: str = index.json_body["paths"]["apis/nodus.dev/v1beta1"]["serverRelativeURL"]
    return url


def test_it_indexes_the_group_version_without_a_leading_slash(alice: ApiClient) -> None:
    index = alice.get("/openapi/v3")
    assert list(index.json_body["paths"]) == ["apis/nodus.dev/v1beta1"]
    url = current_url(alice)
    assert url.startswith(f"{GV_DOC}?hash=")
    assert "no-cache" in index["Cache-Control"]


def test_it_serves_the_document_whose_hash_the_index_names(alice: ApiClient) -> None:
    url = current_url(alice)
    response = alice.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    digest = hashlib.sha512(response.content).hexdigest().upper()
    assert url.endswith(f"?hash={digest}")
    assert response["Etag"] == f'"{digest}"'
    document = orjson.loads(response.content)
    assert document["openapi"].startswith("3.")
    assert "dev.nodus.v1beta1.TrainingRuntime" in document["components"]["schemas"]


def test_it_marks_a_hashed_document_immutable_for_a_year(alice: ApiClient) -> None:
    response = alice.get(current_url(alice))
    assert response["Cache-Control"] == "public, immutable"
    assert response["Vary"] == "Accept"
    expires = email.utils.parsedate_to_datetime(response["Expires"]).timestamp()
    assert abs(expires - (time.time() + 365 * 24 * 3600)) < 120


def test_it_does_not_promise_immutability_without_a_hash(alice: ApiClient) -> None:
    response = alice.get(GV_DOC)
    assert response.status_code == 200
    assert "Etag" in response
    assert "immutable" not in response.get("Cache-Control", "")
    assert "Expires" not in response


def test_it_redirects_a_stale_hash_to_the_current_one(alice: ApiClient) -> None:
    response = alice.get(f"{GV_DOC}?hash=0123ABCD")
    assert response.status_code == 301
    assert response["Location"] == current_url(alice)


def test_it_answers_not_modified_to_a_matching_etag(alice: ApiClient) -> None:
    url = current_url(alice)
    etag = alice.get(url)["Etag"]
    response = alice.get(url, **{"If-None-Match": etag})
    assert response.status_code == 304
    assert response.content == b""


def test_it_declares_what_kubectl_needs_on_every_operation(alice: ApiClient) -> None:
    document = orjson.loads(alice.get(current_url(alice)).content)
    gvk = {"group": "nodus.dev", "version": "v1beta1", "kind": "TrainingRuntime"}
    collection = "/apis/nodus.dev/v1beta1/namespaces/{namespace}/trainingruntimes"
    item = f"{collection}/{{name}}"
    assert {"get", "post"} <= set(document["paths"][collection])
    assert {"get", "put", "patch", "delete"} <= set(document["paths"][item])
    for operations in (document["paths"][collection], document["paths"][item]):
        for method, operation in operations.items():
            if method == "parameters":
                continue
            assert operation["x-kubernetes-group-version-kind"] == gvk
            assert operation["x-kubernetes-action"] in {
                "list",
                "post",
                "get",
                "put",
                "patch",
                "delete",
                "deletecollection",
                "watch",
            }
    patch = document["paths"][item]["patch"]
    params = {p["name"] for p in patch.get("parameters", [])} | {
        p["name"] for p in document["paths"][item].get("parameters", [])
    }
    assert {"dryRun", "fieldManager", "fieldValidation", "force"} <= params
    # No strategic merge patch, or kubectl apply would send one (and get a 415).
    assert set(patch["requestBody"]["content"]) == {
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    }
    schema = document["components"]["schemas"]["dev.nodus.v1beta1.TrainingRuntime"]
    assert schema["x-kubernetes-group-version-kind"] == [gvk]


def test_it_does_not_serve_openapi_v2(alice: ApiClient) -> None:
    response = alice.get(
        "/openapi/v2", Accept="application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    )
    assert response.status_code == 404
    assert response.json_body["reason"] == "NotFound"


def test_it_asks_for_credentials(api: Callable[[str | None], ApiClient]) -> None:
    assert api(None).get("/openapi/v3").status_code == 401
