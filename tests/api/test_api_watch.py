"""Watch over real HTTP against a live daphne: wire format, start points, bookmarks, watch-list,
selector transitions, timeouts, Tables, errors and authorization."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import yaml

from tests.support.watch_live import DEMO, GV, Watcher, manifest

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.fixture
def alice(tight_server: Any) -> Iterator[httpx.Client]:
    with tight_server.client("alice") as client:
        yield client


@pytest.fixture
def tag() -> str:
    """A label value unique to the test, so tests sharing the server never see each other."""
    return uuid.uuid4().hex[:10]


def create(client: httpx.Client, name: str, tag: str, **labels: str) -> dict[str, Any]:
    response = client.post(DEMO, json=manifest(name, {"t": tag, **labels}))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def merge(client: httpx.Client, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    response = client.patch(
        f"{DEMO}/{name}",
        content=orjson.dumps(patch),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def current(client: httpx.Client) -> str:
    rv: str = client.get(DEMO, params={"limit": 1}).json()["metadata"]["resourceVersion"]
    return rv


def rv(event: dict[str, Any]) -> int:
    return int(event["object"]["metadata"]["resourceVersion"])


def test_it_streams_newline_terminated_json_events(alice: httpx.Client, tag: str) -> None:
    created = create(alice, f"wire-{tag}", tag)
    path = f"{DEMO}?watch=true&labelSelector=t%3D{tag}&timeoutSeconds=1"
    started = time.monotonic()
    with alice.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.headers["transfer-encoding"] == "chunked"
        body = response.read()
    assert time.monotonic() - started < 5
    lines = body.split(b"\n")
    assert lines[-1] == b""  # every event, the last included, ends with a newline
    events = [orjson.loads(line) for line in lines[:-1]]
    assert [e["type"] for e in events] == ["ADDED"]
    assert events[0]["object"] == created


def test_a_collection_path_with_a_trailing_slash_watches_alike(
    alice: httpx.Client, tag: str
) -> None:
    # kube trims the path's slashes before it reads the request (RequestInfoFactory).
    created = create(alice, f"slash-{tag}", tag)
    query = f"?watch=1&labelSelector=t%3D{tag}&timeoutSeconds=1"
    events = [orjson.loads(line) for line in alice.get(f"{DEMO}/{query}").text.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["uid"]) for e in events] == [
        ("ADDED", created["metadata"]["uid"])
    ]


def test_it_flushes_headers_before_any_event(alice: httpx.Client, tag: str) -> None:
    watcher = Watcher(
        alice, f"{DEMO}?watch=1&labelSelector=t%3D{tag}&resourceVersion={current(alice)}"
    )
    try:
        assert watcher.status == 200  # Watcher waits for the headers only
        assert watcher.events.empty()
    finally:
        watcher.close()


@pytest.mark.parametrize("start", ["", "&resourceVersion=0"])
def test_it_sends_synthetic_added_events_then_changes(
    alice: httpx.Client, tag: str, start: str
) -> None:
    created = create(alice, f"syn-{tag}", tag)
    watcher = Watcher(alice, f"{DEMO}?watch=1&labelSelector=t%3D{tag}{start}")
    try:
        first = watcher.next()
        assert first is not None
        assert first["type"] == "ADDED"
        assert (
            first["object"]["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        )
        changed = merge(alice, f"syn-{tag}", {"metadata": {"annotations": {"x": "1"}}})
        second = watcher.next()
        assert second is not None
        assert second["type"] == "MODIFIED"
        assert second["object"] == changed
    finally:
        watcher.close()


def test_it_streams_only_later_changes_in_order_from_a_resource_version(
    alice: httpx.Client, tag: str
) -> None:
    first = create(alice, f"a-{tag}", tag)
    start = first["metadata"]["resourceVersion"]
    merge(alice, f"a-{tag}", {"spec": {"task": "DPO"}})
    create(alice, f"b-{tag}", tag)
    watcher = Watcher(alice, f"{DEMO}?watch=1&labelSelector=t%3D{tag}&resourceVersion={start}")
    try:
        replayed = watcher.take(2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in replayed] == [
            ("MODIFIED", f"a-{tag}"),
            ("ADDED", f"b-{tag}"),
        ]
        written: list[int] = []
        lock = threading.Lock()

        def writer(name: str) -> None:
            for i in range(6):
                obj = merge(alice_clone(alice), name, {"metadata": {"annotations": {"i": str(i)}}})
                with lock:
                    written.append(int(obj["metadata"]["resourceVersion"]))

        threads = [threading.Thread(target=writer, args=(n,)) for n in (f"a-{tag}", f"b-{tag}")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        live = watcher.take(len(written))
        revisions = [rv(e) for e in replayed + live]
        assert revisions == sorted(set(revisions))  # ascending, no duplicates
        assert [rv(e) for e in live] == sorted(written)  # no gaps
    finally:
        watcher.close()


def alice_clone(client: httpx.Client) -> httpx.Client:
    """httpx clients are not thread-safe; writers get their own."""
    return httpx.Client(base_url=client.base_url, headers=client.headers, timeout=30)


def test_it_answers_400_to_an_unparsable_resource_version(alice: httpx.Client) -> None:
    response = alice.get(f"{DEMO}?watch=1&resourceVersion=yesterday")
    assert response.status_code == 400
    assert response.json()["kind"] == "Status"


def test_it_ends_a_watch_from_a_compacted_revision_with_an_error_event(
    alice: httpx.Client, tag: str
) -> None:
    old = create(alice, f"old-{tag}", tag)["metadata"]["resourceVersion"]
    # A watch makes sure the hub runs; then outgrow the 60-revision window (the writes'
    # after-commit hook compacts).
    Watcher(alice, f"{DEMO}?watch=1&timeoutSeconds=1&resourceVersion={old}").rest()
    for i in range(80):
        merge(alice, f"old-{tag}", {"metadata": {"annotations": {"i": str(i)}}})
    deadline = time.monotonic() + 15
    while True:
        watcher = Watcher(alice, f"{DEMO}?watch=1&timeoutSeconds=1&resourceVersion={old}")
        assert watcher.status == 200  # the version parsed: errors now come as events
        first = watcher.next()
        watcher.close()
        if first is not None and first["type"] == "ERROR":
            break
        assert time.monotonic() < deadline, "the event log was never compacted"
        time.sleep(0.5)
    status = first["object"]
    assert status["kind"] == "Status"
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {old} (")


def test_it_sends_bookmarks_periodically_and_before_timing_out(
    alice: httpx.Client, tag: str
) -> None:
    start = current(alice)
    path = f"{DEMO}?watch=1&labelSelector=t%3D{tag}&resourceVersion={start}&timeoutSeconds=3"
    events = Watcher(alice, path + "&allowWatchBookmarks=true").rest()
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    # Every second (tests/watch_settings.py) and one at the end; no more.
    assert 2 <= len(bookmarks) <= 4
    for bookmark in bookmarks:
        assert set(bookmark["object"]) == {"kind", "apiVersion", "metadata"}
        assert set(bookmark["object"]["metadata"]) == {"resourceVersion"}
        assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(start)
    assert Watcher(alice, path).rest() == []  # no bookmarks unless asked for


def test_it_serves_a_watch_list_ending_initial_events_with_a_bookmark(
    alice: httpx.Client, tag: str
) -> None:
    a = create(alice, f"wl-a-{tag}", tag)
    b = create(alice, f"wl-b-{tag}", tag)
    watcher = Watcher(
        alice,
        f"{DEMO}?watch=1&labelSelector=t%3D{tag}&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    )
    try:
        initial = watcher.take(3)
        assert [e["type"] for e in initial] == ["ADDED", "ADDED", "BOOKMARK"]
        assert [e["object"] for e in initial[:2]] == [a, b]
        end = initial[2]["object"]["metadata"]
        assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert int(end["resourceVersion"]) >= rv({"object": b})
        changed = merge(alice, f"wl-a-{tag}", {"metadata": {"annotations": {"x": "y"}}})
        later = next(e for e in iter(watcher.next, None) if e["type"] != "BOOKMARK")
        assert later == {"type": "MODIFIED", "object": changed}
    finally:
        watcher.close()


@pytest.mark.parametrize(
    "query",
    [
        "sendInitialEvents=true",
        "sendInitialEvents=true&resourceVersionMatch=Exact",
        "resourceVersionMatch=NotOlderThan",
    ],
)
def test_it_rejects_invalid_watch_list_options_with_422(alice: httpx.Client, query: str) -> None:
    response = alice.get(f"{DEMO}?watch=1&{query}")
    assert response.status_code == 422
    assert response.json()["message"].startswith('ListOptions.meta.k8s.io "" is invalid')


def test_it_types_events_by_selector_transitions(alice: httpx.Client, tag: str) -> None:
    name = f"tr-{tag}"
    watcher = Watcher(
        alice,
        f"{DEMO}?watch=1&labelSelector=t%3D{tag},tier%3Dgold&resourceVersion={current(alice)}",
    )
    try:
        created = create(alice, name, tag, tier="gold")
        left = merge(alice, name, {"metadata": {"labels": {"tier": "silver"}}})
        ignored = merge(alice, name, {"metadata": {"annotations": {"while": "away"}}})
        back = merge(alice, name, {"metadata": {"labels": {"tier": "gold"}}})
        stayed = merge(alice, name, {"metadata": {"annotations": {"while": "home"}}})
        events = watcher.take(4)
        assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED", "MODIFIED"]
        assert events[0]["object"] == created
        gone = events[1]["object"]
        assert gone["metadata"]["labels"]["tier"] == "gold"  # the object as it was ...
        assert gone["metadata"]["resourceVersion"] == left["metadata"]["resourceVersion"]
        assert events[2]["object"] == back
        assert events[3]["object"] == stayed
        assert ignored["metadata"]["resourceVersion"] not in {rv(e) for e in events}
        alice.delete(f"{DEMO}/{name}")
        deleted = watcher.next()
        assert deleted is not None
        assert deleted["type"] == "DELETED"
        assert deleted["object"]["metadata"]["name"] == name
    finally:
        watcher.close()


def test_it_watches_one_object_by_field_selector(alice: httpx.Client, tag: str) -> None:
    watcher = Watcher(
        alice,
        f"{DEMO}?watch=1&fieldSelector=metadata.name%3Done-{tag}&resourceVersion={current(alice)}",
    )
    try:
        create(alice, f"other-{tag}", tag)
        create(alice, f"one-{tag}", tag)
        merge(alice, f"other-{tag}", {"metadata": {"annotations": {"a": "b"}}})
        merge(alice, f"one-{tag}", {"metadata": {"annotations": {"a": "b"}}})
        events = watcher.take(2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", f"one-{tag}"),
            ("MODIFIED", f"one-{tag}"),
        ]
    finally:
        watcher.close()


def test_it_ends_the_stream_at_timeout_seconds_and_by_default(
    alice: httpx.Client, tag: str
) -> None:
    quiet = f"{DEMO}?watch=1&labelSelector=t%3D{tag}&resourceVersion={current(alice)}"
    started = time.monotonic()
    assert Watcher(alice, quiet + "&timeoutSeconds=2").rest() == []
    assert 1.5 <= time.monotonic() - started < 5
    started = time.monotonic()
    Watcher(alice, quiet).rest()  # the server's own bound (2-3 s in tests/watch_settings.py)
    assert 1.5 <= time.monotonic() - started < 6


def test_it_streams_tables_with_column_definitions_only_first(
    alice: httpx.Client, tag: str
) -> None:
    create(alice, f"tab-a-{tag}", tag)
    create(alice, f"tab-b-{tag}", tag)
    path = f"{DEMO}?watch=1&labelSelector=t%3D{tag}&timeoutSeconds=1"
    events = Watcher(alice, path, Accept=TABLE).rest()
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]
    first, second = (e["object"] for e in events)
    assert first["kind"] == second["kind"] == "Table"
    assert next(c["name"] for c in first["columnDefinitions"]) == "Name"
    assert second["columnDefinitions"] is None
    assert first["rows"][0]["cells"][0] == f"tab-a-{tag}"
    assert first["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_it_checks_credentials_and_roles_before_streaming(
    tight_server: Any,
    alice: httpx.Client,
    tag: str,
) -> None:
    with tight_server.client(None) as anonymous:
        response = anonymous.get(f"{DEMO}?watch=1")
        assert response.status_code == 401
        assert response.json()["reason"] == "Unauthorized"
    with httpx.Client(
        base_url=tight_server.url, headers={"Authorization": "Bearer nope"}
    ) as forged:
        assert forged.get(f"{DEMO}?watch=1").status_code == 401
    with tight_server.client("charlie") as charlie:
        response = charlie.get(f"{DEMO}?watch=1")
        assert response.status_code == 403
        assert response.json()["reason"] == "Forbidden"
        # Cluster-wide, charlie sees only what he may read: nothing from demo.
        everywhere = f"{GV}/trainingruntimes?watch=1&labelSelector=t%3D{tag}&timeoutSeconds=2"
        watcher = Watcher(charlie, everywhere + f"&resourceVersion={current(alice)}")
        create(alice, f"hidden-{tag}", tag)
        assert watcher.rest() == []
    with tight_server.client("bob") as bob:
        visible = Watcher(
            bob, f"{GV}/trainingruntimes?watch=1&labelSelector=t%3D{tag}&timeoutSeconds=1"
        )
        assert [e["object"]["metadata"]["name"] for e in visible.rest()] == [f"hidden-{tag}"]


def test_it_keeps_the_initial_events_end_annotation_in_table_bookmarks(
    alice: httpx.Client, tag: str
) -> None:
    create(alice, f"tb-{tag}", tag)
    path = (
        f"{DEMO}?watch=1&labelSelector=t%3D{tag}&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&includeObject=None"
    )
    watcher = Watcher(alice, path, Accept=TABLE)
    try:
        added, bookmark = watcher.take(2)
    finally:
        watcher.close()
    assert added["type"] == "ADDED"
    assert added["object"]["columnDefinitions"]
    assert added["object"]["rows"][0]["object"] is None  # includeObject=None: kube writes null
    assert bookmark["type"] == "BOOKMARK"
    table = bookmark["object"]
    assert table["kind"] == "Table"
    assert table["columnDefinitions"] is None
    [row] = table["rows"]
    assert len(row["cells"]) == len(added["object"]["rows"][0]["cells"])
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_the_deprecated_watch_paths_stream_the_collection_or_one_name(
    alice: httpx.Client, tag: str
) -> None:
    """kube still serves /apis/GROUP/VERSION/watch/...: the collection's watch, and one
    object's (its name as a field selector); both start after the given resourceVersion."""
    create(alice, f"lw-a-{tag}", tag)
    since = current(alice)
    legacy = f"{GV}/watch/namespaces/demo/trainingruntimes"
    collection = Watcher(alice, f"{legacy}?labelSelector=t={tag}&resourceVersion={since}")
    one = Watcher(alice, f"{legacy}/lw-a-{tag}?resourceVersion={since}")
    assert (collection.status, one.status) == (200, 200)
    create(alice, f"lw-b-{tag}", tag)
    merge(alice, f"lw-a-{tag}", {"metadata": {"annotations": {"seen": "yes"}}})
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in collection.take(2)]
    assert got == [("ADDED", f"lw-b-{tag}"), ("MODIFIED", f"lw-a-{tag}")]
    mine = one.next()
    assert mine is not None
    assert (mine["type"], mine["object"]["metadata"]["name"]) == ("MODIFIED", f"lw-a-{tag}")
    collection.close()
    one.close()
    # They only watch: a write through them is 405 and writes nothing.
    refused = alice.post(legacy, json=manifest(f"lw-c-{tag}", {"t": tag}))
    assert refused.status_code == 405
    assert refused.json()["reason"] == "MethodNotAllowed"
    assert alice.get(f"{DEMO}/lw-c-{tag}").status_code == 404


def test_a_watch_asking_for_yaml_is_406_as_in_kube(alice: httpx.Client) -> None:
    answer = alice.get(DEMO, params={"watch": "true"}, headers={"Accept": "application/yaml"})
    assert answer.status_code == 406
    # The refusal is a Status in the YAML the caller asked for, as kube writes errors.
    assert answer.headers["content-type"] == "application/yaml"
    assert yaml.safe_load(answer.text)["reason"] == "NotAcceptable"


def test_a_watch_the_caller_may_not_make_is_403_whatever_it_accepts(tight_server: Any) -> None:
    # kube authorizes in a filter before the handler judges the media type.
    with tight_server.client("charlie") as charlie:
        answer = charlie.get(DEMO, params={"watch": "true"}, headers={"Accept": "application/yaml"})
    assert answer.status_code == 403
    assert yaml.safe_load(answer.text)["reason"] == "Forbidden"
