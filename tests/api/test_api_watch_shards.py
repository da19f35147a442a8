"""Sharded list and watch live (KEP-5866): disjoint shards see every event exactly once.

A daphne of its own, with bookmarks every half second (so a client knows when it has caught up)
and watches the server ends after 4-6 s (so clients resume from their last resourceVersion, as
client-go's reflector does). Which shard owns an object is worked out here from its uid with
`fnv1a_64`, itself checked against the FNV reference vectors; the reference stream is an
unsharded watch of the same objects.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runtimes.apimachinery.selectors.shards import FULL_END, fnv1a_64
from tests.support import liveserver
from tests.support.liveserver import LiveServer
from tests.support.watch_live import DEMO, manifest

SHARDS = 4
WRITERS = 6
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def shard(index: int, count: int = SHARDS) -> str:
    step = (1 << 64) // count
    end = FULL_END if index == count - 1 else f"0x{(index + 1) * step:016x}"
    return f"shardRange(object.metadata.uid, '0x{index * step:016x}', '{end}')"


def owner(uid: str, count: int = SHARDS) -> int:
    return fnv1a_64(uid.encode()) // ((1 << 64) // count)


def _start(data_dir: Path) -> LiveServer:
    return liveserver.start(
        data_dir,
        liveserver.prepare(data_dir),
        NODUS_WATCH_BOOKMARK_SECONDS="0.5",
        NODUS_WATCH_TIMEOUT_RANGE="4,6",
        NODUS_ACCESS_CACHE_SECONDS="60",
    )


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from liveserver.serve("nodus-shards-", _start)


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:10]


def send(client: httpx.Client, method: str, url: str, **kw: Any) -> httpx.Response:
    """A request retried after 429 as client-go does (one caller lists at most twice at once)."""
    while True:
        response = client.request(method, url, **kw)
        if response.status_code != 429:
            return response
        time.sleep(float(response.headers.get("Retry-After", "1")))


class ShardClient(threading.Thread):
    """An informer for one shard (None: the whole collection): a sharded list, then watches
    from its resourceVersion, resumed from the last one seen whenever a watch ends, until it
    has seen `final`. With `restart_after`, it also drops its watch once after that many
    events and resumes, as a restarted replica does."""

    def __init__(
        self, server: LiveServer, tag: str, selector: str | None, restart_after: int = 0
    ) -> None:
        super().__init__(daemon=True)
        self.server, self.tag, self.selector = server, tag, selector
        self.restart_after = restart_after
        self.listed: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.watches = 0
        self.restarted_at: int | None = None  # the resourceVersion it resumed from
        self.final: int | None = None
        self.ready = threading.Event()
        self.error: BaseException | None = None

    def params(self) -> dict[str, str]:
        params = {"labelSelector": f"t={self.tag}"}
        if self.selector is not None:
            params["shardSelector"] = self.selector
        return params

    def run(self) -> None:
        try:
            with self.server.client("alice") as client:
                body = send(client, "GET", DEMO, params=self.params()).raise_for_status().json()
                meta = body["metadata"]
                if self.selector is not None:
                    assert meta["shardInfo"] == {"selector": self.selector}
                else:
                    assert "shardInfo" not in meta
                self.listed = body["items"]
                revision = int(meta["resourceVersion"])
                self.ready.set()
                done = False
                while not done:
                    revision, done = self._watch(client, revision)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.ready.set()

    def _watch(self, client: httpx.Client, revision: int) -> tuple[int, bool]:
        params = {
            **self.params(),
            "watch": "1",
            "resourceVersion": str(revision),
            "allowWatchBookmarks": "true",
        }
        self.watches += 1
        with client.stream("GET", DEMO, params=params, timeout=30) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if not line:
                    continue
                event = orjson.loads(line)
                assert event["type"] != "ERROR", event
                seen = int(event["object"]["metadata"]["resourceVersion"])
                assert seen >= revision, (event, revision)
                if event["type"] != "BOOKMARK":
                    assert seen > revision, "an event at or before the start was sent again"
                    self.events.append(event)
                revision = seen
                if self.final is not None and revision >= self.final:
                    return revision, True
                if self.restart_after and len(self.events) >= self.restart_after:
                    self.restart_after = 0
                    self.restarted_at = revision
                    return revision, False  # leaving the block drops the connection
        return revision, False  # the server ended the watch: resume


def key(event: dict[str, Any]) -> tuple[str, str, int]:
    meta = event["object"]["metadata"]
    return event["type"], meta["name"], int(meta["resourceVersion"])


def current(server: LiveServer) -> int:
    with server.client("alice") as client:
        body = send(client, "GET", DEMO, params={"limit": "1"}).raise_for_status().json()
    return int(body["metadata"]["resourceVersion"])


def write(server: LiveServer, writer: int, tag: str, record: dict[str, list[Any]]) -> None:
    """A writer's own objects: create six, update each twice, delete three; also update and
    delete one object that existed before the clients listed."""
    mine = [f"w{writer}-{i}-{tag}" for i in range(6)]
    with server.client("alice") as client:

        def patch(name: str, value: str) -> None:
            body = {"metadata": {"annotations": {"step": value}}}
            response = send(
                client,
                "PATCH",
                f"{DEMO}/{name}",
                content=orjson.dumps(body),
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert response.status_code == 200, response.text
            record["MODIFIED"].append((name, int(response.json()["metadata"]["resourceVersion"])))

        def delete(name: str) -> None:
            assert send(client, "DELETE", f"{DEMO}/{name}").status_code == 200
            record["DELETED"].append(name)

        for name in mine:
            response = send(client, "POST", DEMO, json=manifest(name, {"t": tag}))
            assert response.status_code == 201, response.text
            record["ADDED"].append((name, int(response.json()["metadata"]["resourceVersion"])))
        for step, name in itertools.product(("1", "2"), mine):
            patch(name, step)
        old = f"pre-{writer}-{tag}"
        patch(old, "w")
        for name in [*mine[::2], old]:
            delete(name)


def test_disjoint_shards_see_every_event_exactly_once(server: LiveServer, tag: str) -> None:
    with server.client("alice") as client:
        for writer in range(WRITERS):
            name = f"pre-{writer}-{tag}"
            assert client.post(DEMO, json=manifest(name, {"t": tag})).status_code == 201
    shards = [
        ShardClient(server, tag, shard(i), restart_after=5 if i == 1 else 0) for i in range(SHARDS)
    ]
    everything = ShardClient(server, tag, None)
    clients = [*shards, everything]
    for c in clients:
        c.start()
    for c in clients:
        assert c.ready.wait(30)
        assert c.error is None, c.error

    record: dict[str, list[Any]] = {"ADDED": [], "MODIFIED": [], "DELETED": []}
    writers = [
        threading.Thread(target=write, args=(server, w, tag, record), daemon=True)
        for w in range(WRITERS)
    ]
    failures: list[BaseException] = []
    for t in writers:
        t.start()
    for t in writers:
        t.join(120)
        assert not t.is_alive()
    final = current(server)
    for c in clients:
        c.final = final
    for c in clients:
        c.join(60)
        assert not c.is_alive(), "a client never caught up with the last write"
        if c.error is not None:
            failures.append(c.error)
    assert not failures, failures

    # The lists: every object that existed before, in exactly one shard, and in its own.
    listed = [(i, item) for i, c in enumerate(shards) for item in c.listed]
    assert sorted(item["metadata"]["name"] for _, item in listed) == sorted(
        item["metadata"]["name"] for item in everything.listed
    )
    assert len(everything.listed) == WRITERS
    assert all(owner(item["metadata"]["uid"]) == i for i, item in listed)

    # The watches: each shard only its own objects, in order; together, the unsharded stream
    # exactly, with no event missing and none twice.
    for i, c in enumerate(shards):
        assert all(owner(e["object"]["metadata"]["uid"]) == i for e in c.events), i
        revisions = [int(e["object"]["metadata"]["resourceVersion"]) for e in c.events]
        assert revisions == sorted(set(revisions)), f"shard {i} out of order or repeated"
    union = [key(e) for c in shards for e in c.events]
    assert len(union) == len(set(union)), Counter(union).most_common(3)
    reference = [key(e) for e in everything.events]
    assert sorted(union, key=lambda k: k[2]) == reference

    # ... and that is every write the writers made.
    assert Counter(t for t, _, _ in reference) == {
        "ADDED": WRITERS * 6,
        "MODIFIED": WRITERS * 13,
        "DELETED": WRITERS * 4,
    }
    assert {("ADDED", n, rv) for n, rv in record["ADDED"]} <= set(union)
    assert {("MODIFIED", n, rv) for n, rv in record["MODIFIED"]} <= set(union)
    assert sorted(n for t, n, _ in union if t == "DELETED") == sorted(record["DELETED"])
    assert len({owner(e["object"]["metadata"]["uid"]) for e in everything.events}) == SHARDS

    # The restarted client resumed from where it had got to: no gap, no repeat.
    restarted = shards[1]
    assert restarted.restarted_at is not None
    assert restarted.watches >= 2
    own = [
        k
        for e, k in zip(everything.events, reference, strict=True)
        if owner(e["object"]["metadata"]["uid"]) == 1
    ]
    assert [key(e) for e in restarted.events] == own
    assert any(k[2] > restarted.restarted_at for k in own)  # it had more to get after


def test_a_sharded_watch_list_ends_its_initial_events_with_the_bookmark(
    server: LiveServer, tag: str
) -> None:
    uids: dict[str, str] = {}
    with server.client("alice") as client:
        for i in range(10):
            created = client.post(DEMO, json=manifest(f"wl-{i}-{tag}", {"t": tag})).json()
            uids[created["metadata"]["name"]] = created["metadata"]["uid"]
        seen: dict[str, int] = {}
        for index in range(2):
            params = {
                "watch": "1",
                "sendInitialEvents": "true",
                "resourceVersionMatch": "NotOlderThan",
                "allowWatchBookmarks": "true",
                "labelSelector": f"t={tag}",
                "shardSelector": shard(index, 2),
            }
            with client.stream("GET", DEMO, params=params, timeout=30) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if not line:
                        continue
                    event = orjson.loads(line)
                    if event["type"] == "BOOKMARK":
                        annotations = event["object"]["metadata"].get("annotations", {})
                        assert annotations == {INITIAL_EVENTS_END: "true"}
                        break
                    assert event["type"] == "ADDED"
                    name = event["object"]["metadata"]["name"]
                    assert name not in seen
                    seen[name] = index
    assert seen == {name: owner(uid, 2) for name, uid in uids.items()}


@pytest.mark.parametrize(
    ("selector", "what"),
    [
        ("shardRange(object.metadata.uid, '0x0', '0x8')", "hexStart must be a 0x-prefixed"),
        ("shardRange(object.metadata.labels, '0x0', '0x8')", "unsupported field path"),
        (f"{shard(0)} ||", "CEL parse error"),
    ],
)
def test_a_watch_with_a_malformed_shard_selector_is_400(
    server: LiveServer, selector: str, what: str
) -> None:
    with server.client("alice") as client:
        response = client.get(DEMO, params={"watch": "1", "shardSelector": selector})
    assert response.status_code == 400
    status = response.json()
    assert status["reason"] == "BadRequest"
    assert what in status["message"]
    assert status["details"]["causes"][0]["field"] == "shardSelector"


def cache_lists(server: LiveServer) -> float:
    text = httpx.get(f"{server.url}/metrics").raise_for_status().text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "apiserver_cache_list_total"
    )


def test_a_sharded_list_from_the_cache_holds_only_its_shard(server: LiveServer, tag: str) -> None:
    uids: dict[str, str] = {}
    with server.client("alice") as client:
        for i in range(8):
            created = client.post(DEMO, json=manifest(f"lp-{i}-{tag}", {"t": tag})).json()
            uids[created["metadata"]["name"]] = created["metadata"]["uid"]
    with server.client("bob") as client:
        for rv in ("0", ""):  # at once, and consistent: both from the watch cache
            before = cache_lists(server)
            params = {"labelSelector": f"t={tag}", "shardSelector": shard(0, 2)}
            listed = client.get(DEMO, params={**params, "resourceVersion": rv})
            assert listed.status_code == 200
            assert cache_lists(server) == before + 1, rv
            body = listed.json()
            assert body["metadata"]["shardInfo"] == {"selector": shard(0, 2)}
            names = {item["metadata"]["name"] for item in body["items"]}
            assert names == {n for n, uid in uids.items() if owner(uid, 2) == 0}


def test_a_websocket_watch_streams_only_its_shard(server: LiveServer, tag: str) -> None:
    from websockets.sync.client import connect

    path = f"{DEMO}?watch=1&labelSelector=t%3D{tag}&shardSelector={quote(shard(0, 2))}"
    url = server.url.replace("http://", "ws://") + path
    headers = {"Authorization": f"Bearer {server.tokens['alice']}"}
    with connect(url, origin=server.url, additional_headers=headers) as ws:
        mine: list[str] = []
        with server.client("alice") as client:
            # Until one lands in the shard: every other change before it must have been passed.
            for i in itertools.count():
                created = send(client, "POST", DEMO, json=manifest(f"ws-{i}-{tag}", {"t": tag}))
                body = created.raise_for_status().json()
                if owner(body["metadata"]["uid"], 2) == 0:
                    mine.append(body["metadata"]["name"])
                    if len(mine) == 3:
                        break
        got = [orjson.loads(ws.recv(timeout=10)) for _ in mine]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("ADDED", name) for name in mine
    ]
