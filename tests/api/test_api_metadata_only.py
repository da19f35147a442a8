"""Metadata-only reads: `as=PartialObjectMetadata` and `as=PartialObjectMetadataList` (meta.k8s.io
v1 and v1beta1), what kube's metadata client and metadata informers (the garbage collector's)
ask for. In-process for GET and list; over a live server for the watch (on the event loop and
the view pool alike) and for the list a live server answers from its cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.api import GV, ApiClient, runtime_manifest
from tests.support.liveserver import LiveServer
from tests.support.watch_live import Watcher

TRS = f"{GV}/namespaces/demo/trainingruntimes"
PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# What client-go's metadata client sends: protobuf first, then JSON, then plain JSON.
METADATA_CLIENT = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    return api("alice")


def create(client: ApiClient, name: str) -> dict[str, Any]:
    body = runtime_manifest(name)
    body["metadata"]["annotations"] = {"note": name}
    response = client.post(TRS, body)
    assert response.status_code == 201, response.json_body
    created: dict[str, Any] = response.json_body
    return created


def test_it_gets_one_object_as_partial_object_metadata(alice: ApiClient) -> None:
    created = create(alice, "meta-one")
    response = alice.get(f"{TRS}/meta-one", Accept=PARTIAL)
    assert response.status_code == 200
    assert response.json_body == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": created["metadata"],
    }
    older = alice.get(f"{TRS}/meta-one", Accept=PARTIAL.replace("v=v1", "v=v1beta1"))
    assert older.json_body["apiVersion"] == "meta.k8s.io/v1beta1"


def test_it_lists_as_partial_object_metadata_list(alice: ApiClient) -> None:
    first, second = create(alice, "meta-a"), create(alice, "meta-b")
    response = alice.get(f"{TRS}?limit=1", Accept=METADATA_CLIENT)
    assert response.status_code == 200
    body = response.json_body
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["apiVersion"] == "meta.k8s.io/v1"
    assert body["metadata"]["continue"]
    assert body["metadata"]["remainingItemCount"] == 1
    assert body["items"] == [
        {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m}
        for m in [first["metadata"]]
    ]
    rest = alice.get(f"{TRS}?continue={body['metadata']['continue']}", Accept=PARTIAL_LIST)
    assert [i["metadata"] for i in rest.json_body["items"]] == [second["metadata"]]
    assert all(set(i) == {"kind", "apiVersion", "metadata"} for i in rest.json_body["items"])


@pytest.mark.parametrize(
    ("path", "accept", "message"),
    [
        (
            f"{TRS}/meta-x",
            PARTIAL_LIST,
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            "(*unstructured.Unstructured)",
        ),
        (
            TRS,
            PARTIAL,
            "you requested PartialObjectMetadata, but the requested object is a list "
            "(*unstructured.UnstructuredList)",
        ),
    ],
)
def test_it_answers_406_to_a_metadata_rendering_that_does_not_fit(
    alice: ApiClient, path: str, accept: str, message: str
) -> None:
    create(alice, "meta-x")
    response = alice.get(path, Accept=accept)
    assert response.status_code == 406
    assert response.json_body["reason"] == "NotAcceptable"
    assert response.json_body["message"] == message


def test_it_refuses_an_unknown_version_of_the_metadata_types(alice: ApiClient) -> None:
    create(alice, "meta-v")
    response = alice.get(f"{TRS}/meta-v", Accept=PARTIAL.replace("v=v1", "v=v2"))
    assert response.status_code == 406
    fallback = alice.get(f"{TRS}/meta-v", Accept=PARTIAL.replace("v=v1", "v=v2") + ",*/*")
    assert fallback.json_body["kind"] == "TrainingRuntime"  # the next range in Accept


# -- a live server: the cache, the event loop and watches ----------------------------------------


@pytest.fixture
def live(daphne_server: LiveServer) -> Iterator[httpx.Client]:
    with daphne_server.client("alice") as client:
        yield client


def live_create(client: httpx.Client, name: str) -> dict[str, Any]:
    response = client.post(TRS, json=runtime_manifest(name))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_live_server_lists_and_gets_metadata_only(live: httpx.Client) -> None:
    created = live_create(live, "live-meta")
    listed = live.get(TRS, params={"resourceVersion": "0"}, headers={"Accept": METADATA_CLIENT})
    assert listed.status_code == 200
    assert listed.json()["kind"] == "PartialObjectMetadataList"
    names = [i["metadata"]["name"] for i in listed.json()["items"]]
    assert "live-meta" in names
    one = live.get(f"{TRS}/live-meta", headers={"Accept": PARTIAL}).json()
    assert one == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": created["metadata"],
    }


def test_a_watch_streams_metadata_only_events(live: httpx.Client) -> None:
    created = live_create(live, "watch-meta")
    rv = created["metadata"]["resourceVersion"]
    path = f"{TRS}?watch=1&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dwatch-meta"
    watcher = Watcher(live, f"{path}&resourceVersion={rv}", Accept=PARTIAL)
    try:
        patched = live.patch(
            f"{TRS}/watch-meta",
            json={"metadata": {"labels": {"seen": "yes"}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 200
        [event] = watcher.take(1)
    finally:
        watcher.close()
    assert event == {
        "type": "MODIFIED",
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": patched.json()["metadata"],
        },
    }
    # From "now" (a watch-list): the initial object, then a bookmark, both metadata only.
    listing = Watcher(
        live, f"{path}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", Accept=PARTIAL
    )
    try:
        added, bookmark = listing.take(2)
    finally:
        listing.close()
    assert added["type"] == "ADDED"
    assert set(added["object"]) == {"kind", "apiVersion", "metadata"}
    assert added["object"]["kind"] == "PartialObjectMetadata"
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "PartialObjectMetadata"
    annotations = bookmark["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


def test_a_watch_refuses_a_list_of_metadata(live: httpx.Client) -> None:
    response = live.get(f"{TRS}?watch=1", headers={"Accept": PARTIAL_LIST})
    assert response.status_code == 406
    assert "not a list" in response.json()["message"]
