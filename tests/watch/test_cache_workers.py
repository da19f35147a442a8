"""The watch cache across processes: two daphne workers, writes on A, lists and watches on B.

Every worker keeps its own watch cache (runtimes.watch.cache), fed by its own hub. These tests
drive two workers through HTTP only, on both backends: SQLite (one file shared by the workers,
no Redis: B's hub finds A's writes when a consistent read wakes it, or on its poll each
second) and PostgreSQL + Redis (A's commits nudge B). The windows are made small
(NODUS_EVENT_WINDOW=60 revisions kept in the log, NODUS_HUB_RING=100 events in memory), so
that going below both takes a few hundred writes.

They check, against B while A writes: a list without resourceVersion shows a write just made
on A (a consistent read served from B's cache, not from SQL, and on B's event loop); continue
pages stay at the first page's revision however the objects change meanwhile; a continue
token, an Exact list and a watch from below the window answer 410 Expired as kube-apiserver
does; a selector watch sees objects enter and leave the selection, and the cache answers
selector lists now and at an earlier revision; and a restarted B starts from the store, with
every change it missed.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support import services
from tests.support.cluster import Cluster, redis_database, start_cluster
from tests.support.watch_live import Watcher, manifest, read_events

COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"
MERGE = {"Content-Type": "application/merge-patch+json"}
WINDOW = 60  # NODUS_EVENT_WINDOW: revisions the event log keeps
RING = 100  # NODUS_HUB_RING: events each hub keeps in memory
PLURAL = "trainingruntimes"

Obj = dict[str, Any]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)]
)
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Workers A (0) and B (1) with the same environment, on SQLite or PostgreSQL + Redis."""
    with contextlib.ExitStack() as stack:
        database = redis_url = ""
        if request.param == "postgresql":
            database = stack.enter_context(services.temp_database("nodus_cache"))
            redis_url = stack.enter_context(redis_database())
        yield stack.enter_context(
            start_cluster(
                2,
                database,
                redis_url,
                prefix=f"nodus-cache-{request.param}-",
                NODUS_EVENT_WINDOW=str(WINDOW),
                NODUS_HUB_RING=str(RING),
            )
        )


@contextlib.contextmanager
def workers(cluster: Cluster) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    with cluster.client(0, timeout=30) as a, cluster.client(1, timeout=30) as b:
        yield a, b


# -- reading answers ---------------------------------------------------------------------------


def ok(response: httpx.Response) -> Obj:
    assert response.status_code in (200, 201), f"{response.request.method} {response.url}: " + (
        f"{response.status_code} {response.text[:500]}"
    )
    body: Obj = response.json()
    return body


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


def names(items: list[Obj]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


def listing(client: httpx.Client, **params: Any) -> Obj:
    return ok(client.get(COLLECTION, params=params))


def all_pages(client: httpx.Client, limit: int, **params: Any) -> list[Obj]:
    """Every page of a list, following the continue tokens."""
    pages = [listing(client, limit=limit, **params)]
    params.pop("resourceVersion", None)  # continue carries the revision
    params.pop("resourceVersionMatch", None)
    while token := pages[-1]["metadata"].get("continue"):
        pages.append(listing(client, limit=limit, **{**params, "continue": token}))
    return pages


def items_of(pages: list[Obj]) -> list[Obj]:
    return [item for page in pages for item in page["items"]]


def create(client: httpx.Client, name: str, labels: dict[str, str] | None = None) -> Obj:
    return ok(client.post(COLLECTION, json=manifest(name, labels)))


def patch(client: httpx.Client, name: str, body: Obj) -> Obj:
    return ok(client.patch(f"{COLLECTION}/{name}", content=orjson.dumps(body), headers=MERGE))


def delete(client: httpx.Client, name: str) -> None:
    ok(client.delete(f"{COLLECTION}/{name}"))


def metric(client: httpx.Client, sample: str, **labels: str) -> float:
    """The sum of `sample`'s values with these labels in the worker's /metrics."""
    text = client.get("/metrics").raise_for_status().text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    )


def cache_lists(client: httpx.Client, index: str | None = None) -> float:
    labels = {"resource_prefix": PLURAL} | ({} if index is None else {"index": index})
    return metric(client, "apiserver_cache_list_total", **labels)


def storage_lists(client: httpx.Client) -> float:
    return metric(client, "apiserver_storage_list_total", resource=PLURAL)


def compacted(client: httpx.Client) -> int:
    """The oldest revision the event log still holds."""
    return int(metric(client, "nodus_event_log_compacted_revision"))


def decode_continue(token: str) -> Obj:
    decoded: Obj = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return decoded


def watch_path(**params: Any) -> str:
    return f"{COLLECTION}?{urlencode({'watch': '1', **params})}"


def without_rv(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def with_rv(obj: Obj, revision: int) -> Obj:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(revision)}}


# -- the tests ---------------------------------------------------------------------------------


def test_a_list_on_b_right_after_a_write_on_a_shows_it_from_the_cache(cluster: Cluster) -> None:
    """20 writes on A, each followed at once by a list on B with no resourceVersion: a
    consistent read, so the write is in it, and B answers it from its cache (having waited for
    its hub to apply the store's revision), not from SQL."""
    with workers(cluster) as (a, b):
        from_cache, from_sql = cache_lists(b), storage_lists(b)
        for i in range(20):
            name = f"fresh-{i // 2}"
            if i % 2 == 0:
                written = create(a, name, {"round": str(i)})
            else:
                command = ["python", "-m", "trainer", f"--round={i}"]
                body = {"metadata": {"labels": {"round": str(i)}}, "spec": {"command": command}}
                written = patch(a, name, body)
            listed = listing(b)
            assert rv(listed) >= rv(written), i
            assert [o for o in listed["items"] if o["metadata"]["name"] == name] == [written], i
        assert cache_lists(b) - from_cache == 20
        assert storage_lists(b) == from_sql


class _Writer(threading.Thread):
    """Runs `batches` of writes on A, one batch ahead of the pages read on B: batch n is
    written before page n+1 is asked for and batch n+1 while it is being read."""

    def __init__(self, client: httpx.Client, batches: list[list[tuple[str, str]]]) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.batches = batches
        self.written = 0  # batches done
        self.reading = 0  # pages the reader has started on
        self.failures: list[str] = []
        self.changed = threading.Condition()

    def run(self) -> None:
        try:
            for number, batch in enumerate(self.batches, 1):
                for op, name in batch:
                    if op == "create":
                        create(self.client, name, {"late": "yes"})
                    elif op == "update":
                        patch(self.client, name, {"metadata": {"labels": {"late": "yes"}}})
                    else:
                        delete(self.client, name)
                with self.changed:
                    self.written = number
                    self.changed.notify_all()
                    # The next batch goes out once the reader has asked for this batch's page.
                    self.changed.wait_for(lambda n=number: self.reading >= n, 30)
        except Exception as exc:  # reported by the test
            self.failures.append(repr(exc))
        finally:
            with self.changed:
                self.written = len(self.batches) + 1  # never leave the reader waiting
                self.changed.notify_all()

    def before_page(self, number: int) -> None:
        """Blocks until batch `number` is written, then lets the writer go on with the next."""
        with self.changed:
            self.changed.wait_for(lambda: self.written >= number, 30)
            self.reading = number
            self.changed.notify_all()


def test_continue_pages_stay_at_the_first_pages_revision_while_a_writes(
    cluster: Cluster,
) -> None:
    """Pages of 5 on B, continued while A updates, creates and deletes objects all over the
    key range: together they are exactly the list taken before, at its revision."""
    with workers(cluster) as (a, b):
        seeded = [f"page-{i:02d}" for i in range(30)]
        for name in seeded:
            create(a, name, {"seed": "yes"})
        whole = listing(b)
        r0 = rv(whole)
        expected = whole["items"]
        assert set(seeded) <= set(names(expected))
        assert names(expected) == sorted(names(expected))
        first = listing(b, limit=5)
        assert rv(first) == r0  # nothing was written in between
        assert first["items"] == expected[:5]
        assert first["metadata"]["remainingItemCount"] == len(expected) - 5

        # Three writes before each later page: one to an object on it or behind it, one to an
        # object still ahead, a new object between two seeded ones.
        batches = [
            [
                ("update", f"page-{4 * k + 3:02d}"),
                ("create", f"page-{4 * k + 1:02d}b"),
                ("delete", f"page-{4 * k + 2:02d}"),
            ]
            for k in range((len(expected) - 5 + 4) // 5)
        ]
        # A watch on B from R0: once it has delivered a batch's events, B's hub has applied
        # them to its cache (under the same lock), so the next page must take them back.
        watching = cluster.client(1, timeout=30)
        follower = Watcher(watching, watch_path(resourceVersion=r0))
        seen: list[Obj] = []
        writer = _Writer(a, batches)
        from_cache = cache_lists(b)
        writer.start()
        pages = [first]
        try:
            while token := pages[-1]["metadata"].get("continue"):
                writer.before_page(len(pages))
                seen += follower.take(3 * len(pages) - len(seen), timeout=15)
                pages.append(listing(b, limit=5, **{"continue": token}))
            writer.join(60)
            seen += follower.take(3 * len(batches) - len(seen), timeout=15)
        finally:
            follower.close()
            watching.close()
        assert not writer.is_alive()
        assert not writer.failures, writer.failures
        assert writer.reading == len(batches) == len(pages) - 1
        typed = {"update": "MODIFIED", "create": "ADDED", "delete": "DELETED"}
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [
            (typed[op], name) for batch in batches for op, name in batch
        ]

        assert items_of(pages) == expected  # names, resourceVersions, bodies
        assert [rv(page) for page in pages] == [r0] * len(pages)
        served = 0
        for page in pages[:-1]:
            served += len(page["items"])
            assert len(page["items"]) == 5
            assert page["metadata"]["remainingItemCount"] == len(expected) - served
        assert "continue" not in pages[-1]["metadata"]
        assert "remainingItemCount" not in pages[-1]["metadata"]
        assert cache_lists(b) - from_cache == len(pages) - 1  # the continues came from memory

        # The writes did happen, and B shows them now.
        now = listing(b)
        assert now == listing(a)
        gone = {name for batch in batches for op, name in batch if op == "delete"}
        added = {name for batch in batches for op, name in batch if op == "create"}
        assert set(names(now["items"])) == (set(names(expected)) - gone) | added


def test_below_the_window_continue_exact_and_watch_answer_410(cluster: Cluster) -> None:
    """After more writes than B's ring and the log's window together hold, a continue token,
    an Exact list and a watch from before them answer 410 Expired; the 410 for the continue
    token carries an "inconsistent" token that goes on from the same key at the latest state
    (kube-apiserver's etcd3 store does all three the same way)."""
    with workers(cluster) as (a, b):
        create(a, "churn")
        for name in ("churn-x", "churn-y"):  # enough for a second page, whatever ran before
            create(a, name)
        first = listing(b, limit=2)
        old, token = rv(first), first["metadata"]["continue"]
        after = first["items"][-1]["metadata"]["name"]
        for i in range(RING + WINDOW + 90):
            final = rv(patch(a, "churn", {"metadata": {"annotations": {"n": str(i)}}}))
        # A compacts on a thread of its own after its commits: wait until it has got past `old`.
        deadline = time.monotonic() + 30
        while compacted(a) <= old + 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert compacted(a) > old + 1
        latest = listing(b)  # consistent: B's hub has read past `old` and out of its ring
        assert rv(latest) >= final

        expired = b.get(COLLECTION, params={"limit": 2, "continue": token})
        assert expired.status_code == 410, expired.text
        status = expired.json()
        assert {k: status[k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Expired",
            "code": 410,
        }
        assert status["message"].startswith("The provided continue parameter is too old")
        inconsistent = status["metadata"]["continue"]
        assert decode_continue(inconsistent) == {
            "v": "meta.k8s.io/v1",
            "rv": -1,
            "start": f"demo/{after}\x00",
        }
        rest = all_pages(b, 100, **{"continue": inconsistent})
        assert items_of(rest) == [o for o in latest["items"] if o["metadata"]["name"] > after]

        exact = b.get(
            COLLECTION, params={"resourceVersion": old, "resourceVersionMatch": "Exact", "limit": 5}
        )
        assert exact.status_code == 410, exact.text
        assert exact.json()["reason"] == "Expired"
        assert exact.json()["message"] == "The resourceVersion for the provided list is too old."

        # kube answers a watch from a compacted resourceVersion with 200 and one ERROR event
        # holding the 410 Status, then ends the stream.
        response, events = read_events(b, watch_path(resourceVersion=old), seconds=15)
        assert response.status_code == 200
        assert [e["type"] for e in events] == ["ERROR"]
        error = events[0]["object"]
        assert (error["kind"], error["status"], error["reason"], error["code"]) == (
            "Status",
            "Failure",
            "Expired",
            410,
        )
        assert error["message"].startswith(f"too old resource version: {old} (")


def test_a_selector_watch_and_selector_lists_follow_objects_in_and_out(cluster: Cluster) -> None:
    """A watch on B for tier=gold sees an object leave (DELETED, with its last gold content and
    the new revision), one enter (ADDED), a gold one deleted and one created; lists by label
    then show the new gold set, and at the earlier revision the old one."""
    with workers(cluster) as (a, b):
        tiers = {"sel-1": "gold", "sel-2": "gold", "sel-3": "gold", "sel-4": "silver"}
        for name, tier in {**tiers, "sel-5": "silver"}.items():
            create(a, name, {"tier": tier})
        gold_before = listing(b, labelSelector="tier=gold")
        silver_before = listing(b, labelSelector="tier=silver")
        start = rv(gold_before)
        assert rv(silver_before) == start
        assert names(gold_before["items"]) == ["sel-1", "sel-2", "sel-3"]
        old = {o["metadata"]["name"]: o for o in gold_before["items"] + silver_before["items"]}
        by_label = cache_lists(b, "label")

        watching = cluster.client(1, timeout=30)  # its own: the watch is read on a thread
        watcher = Watcher(watching, watch_path(labelSelector="tier=gold", resourceVersion=start))
        try:
            assert watcher.status == 200
            left = patch(a, "sel-1", {"metadata": {"labels": {"tier": "silver"}}})
            entered = patch(a, "sel-4", {"metadata": {"labels": {"tier": "gold"}}})
            delete(a, "sel-2")
            made = create(a, "sel-6", {"tier": "gold"})
            patch(a, "sel-5", {"metadata": {"annotations": {"seen": "no"}}})  # silver: no event
            touched = patch(a, "sel-3", {"metadata": {"annotations": {"seen": "yes"}}})
            events = watcher.take(5, timeout=15)
        finally:
            watcher.close()
            watching.close()
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("DELETED", "sel-1"),
            ("ADDED", "sel-4"),
            ("DELETED", "sel-2"),
            ("ADDED", "sel-6"),
            ("MODIFIED", "sel-3"),
        ]
        objects = [e["object"] for e in events]
        assert objects[0] == with_rv(old["sel-1"], rv(left))  # as it was, at the new revision
        assert objects[1] == entered
        assert rv(entered) < rv(objects[2]) < rv(made)
        assert without_rv(objects[2]) == without_rv(old["sel-2"])
        assert objects[3] == made
        assert objects[4] == touched

        everything = listing(a)["items"]
        current = {o["metadata"]["name"]: o for o in everything}
        gold = [current[n] for n in ("sel-3", "sel-4", "sel-6")]
        gold_now = listing(b, labelSelector="tier=gold")
        assert gold_now["items"] == gold
        assert rv(gold_now) >= rv(touched)
        paged = all_pages(b, 1, labelSelector="tier=gold")
        assert items_of(paged) == gold
        assert {rv(page) for page in paged} == {rv(paged[0])}
        assert listing(b, labelSelector="tier in (gold)")["items"] == gold
        assert listing(b, labelSelector="tier,tier!=silver")["items"] == gold
        # Without `tier`, != also matches every object that has no tier label at all.
        assert listing(b, labelSelector="tier!=silver")["items"] == [
            o for o in everything if o["metadata"].get("labels", {}).get("tier") != "silver"
        ]

        # At the revision before the changes: the cache takes them back.
        exact = {"resourceVersion": start, "resourceVersionMatch": "Exact"}
        then = listing(b, labelSelector="tier=gold", **exact)
        assert rv(then) == start
        assert then["items"] == gold_before["items"]
        assert items_of(all_pages(b, 1, labelSelector="tier=gold", **exact)) == gold_before["items"]
        assert listing(b, labelSelector="tier=silver", **exact)["items"] == silver_before["items"]
        assert cache_lists(b, "label") > by_label


def test_a_restarted_worker_starts_from_the_store_and_replays_what_it_missed(
    cluster: Cluster,
) -> None:
    """B stopped while A creates, updates and deletes; B started again on the same database
    lists every change at once (its cache warmed from the store) and a watch on it from a
    resourceVersion taken before the restart delivers the missed events in order."""
    with workers(cluster) as (a, b):
        create(a, "restart-1")
        create(a, "restart-2")
        before = rv(listing(b))
    cluster.stop_worker(1)
    with cluster.client(0, timeout=30) as a:
        made = create(a, "restart-3")
        changed = patch(a, "restart-1", {"metadata": {"labels": {"after": "restart"}}})
        delete(a, "restart-2")
        last = rv(listing(a))
    cluster.start_worker(1)
    with workers(cluster) as (a, b):
        first = listing(b)
        assert (cache_lists(b), storage_lists(b)) == (1, 0)  # B's first list, from its cache
        assert first == listing(a)
        assert rv(first) == last
        current = {o["metadata"]["name"]: o for o in first["items"]}
        assert current["restart-3"] == made
        assert current["restart-1"] == changed
        assert "restart-2" not in current

        assert before >= compacted(b) - 1  # still inside the window: a watch can resume
        response, events = read_events(b, watch_path(resourceVersion=before), count=3)
        assert response.status_code == 200
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "restart-3"),
            ("MODIFIED", "restart-1"),
            ("DELETED", "restart-2"),
        ]
        assert events[0]["object"] == made
        assert events[1]["object"] == changed
        assert rv(changed) < rv(events[2]["object"]) == last
