"""Two daphne workers on PostgreSQL + Redis: watches on one see every write made through the other.

The scale-out shape (scripts/scale-out): a fresh PostgreSQL database, migrated, with users,
project and tokens made by the project's own management commands; REDIS_URL set, so the
channel layer is channels-redis and a write on worker A reaches worker B's hub as a revision
nudge, after which B re-reads the event log in revision order. Eight writer threads create and
patch runtimes through A; on B two watchers stream from a resourceVersion without a break and a
third drops its connection every ~2 s and resumes from the last resourceVersion it received
(checklist item 45). Each must end up with exactly the revisions the event table holds for the
namespace, once each, in increasing order. And a write on A reaches a watcher on B at once,
not on B's next poll of the log: the writer's process nudges even when it has no hub itself.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import orjson
import pytest

from tests.support import services
from tests.support.api import runtime_manifest
from tests.support.cluster import Cluster, redis_database, start_cluster

pytestmark = pytest.mark.services

RESOURCE = "trainingruntimes.nodus.dev"
COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"
WRITERS = 8
WRITE_SECONDS = 8.0  # long enough for the resuming watcher to reconnect several times
CATCH_UP_SECONDS = 20.0
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Two workers on a fresh PostgreSQL database, with a Redis database of their own."""
    with (
        services.temp_database("nodus_mw") as database,
        redis_database() as redis_url,
        start_cluster(2, database, redis_url, prefix="nodus-multiworker-") as made,
    ):
        yield made


@dataclass
class Watcher:
    """Streams watch events from worker B and records (revision, type) in arrival order."""

    cluster: Cluster
    start: int
    resume_every: float | None = None  # None: one connection throughout
    read_timeout: float = 15.0
    seen: list[tuple[int, str]] = field(default_factory=list)
    arrivals: dict[int, float] = field(default_factory=dict)  # revision: time.monotonic()
    errors: list[str] = field(default_factory=list)
    connections: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def last(self) -> int:
        return self.seen[-1][0] if self.seen else self.start

    def run(self) -> None:
        # The resuming watcher reads with a short timeout, so a quiet moment also makes it
        # reconnect from its last revision: exactly what it is there to exercise.
        timeout = httpx.Timeout(10, read=self.read_timeout)
        with self.cluster.client(1, timeout=timeout) as client:
            while not self.stop.is_set():
                with contextlib.suppress(httpx.TransportError):
                    self._one_connection(client)

    def _one_connection(self, client: httpx.Client) -> None:
        params = {"watch": "1", "resourceVersion": str(self.last)}
        hang_up = (
            None
            if self.resume_every is None
            else time.monotonic() + self.resume_every * random.uniform(0.75, 1.25)
        )
        with client.stream("GET", COLLECTION, params=params) as response:
            self.connections += 1
            if response.status_code != 200:
                self.errors.append(f"{response.status_code}: {response.read()[:500]!r}")
                time.sleep(0.5)
                return
            for line in response.iter_lines():
                if line:
                    event = orjson.loads(line)
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        revision = int(event["object"]["metadata"]["resourceVersion"])
                        self.seen.append((revision, event["type"]))
                        self.arrivals[revision] = time.monotonic()
                    elif event["type"] == "ERROR":
                        self.errors.append(str(event["object"]))
                if self.stop.is_set() or (hang_up is not None and time.monotonic() > hang_up):
                    return  # leaving the block closes the connection mid-stream


def _writer(cluster: Cluster, worker: int, deadline: float, failures: list[str]) -> None:
    """Creates runtimes and patches them (and one shared runtime) until the deadline."""
    with cluster.client(0, timeout=30) as client:
        i = 0
        while time.monotonic() < deadline:
            name = f"w{worker}-{i}"
            created = client.post(COLLECTION, json=runtime_manifest(name))
            patches = [
                (name, {"metadata": {"labels": {"round": str(i)}}}),
                (name, {"spec": {"command": ["python", "-m", "trainer", f"--round={i}"]}}),
                ("shared", {"metadata": {"annotations": {f"nodus.dev/w{worker}": str(i)}}}),
            ]
            answers = [created] + [
                client.patch(f"{COLLECTION}/{target}", content=orjson.dumps(body), headers=MERGE)
                for target, body in patches
            ]
            failures += [
                f"{r.request.method} {r.status_code} {r.text[:300]}" for r in answers if r.is_error
            ]
            i += 1


def _logged_revisions(database_url: str, after: int) -> list[tuple[int, str]]:
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1)) as conn:
        rows = conn.execute(
            "SELECT revision, type FROM runtimes_event WHERE resource = %s AND namespace = %s "
            "AND revision > %s ORDER BY revision",
            (RESOURCE, "demo", after),
        ).fetchall()
    return [(int(revision), str(type_)) for revision, type_ in rows]


def test_it_delivers_every_revision_once_in_order_across_workers(cluster: Cluster) -> None:
    started = time.monotonic()
    with cluster.client(0, timeout=30) as a:
        a.post(COLLECTION, json=runtime_manifest("shared")).raise_for_status()
    with cluster.client(1, timeout=30) as b:
        listed = b.get(COLLECTION)
        listed.raise_for_status()
    start = int(listed.json()["metadata"]["resourceVersion"])

    watchers = [
        Watcher(cluster, start),
        Watcher(cluster, start),
        Watcher(cluster, start, resume_every=2.0, read_timeout=1.0),
    ]
    watch_threads = [threading.Thread(target=w.run, daemon=True) for w in watchers]
    for thread in watch_threads:
        thread.start()

    failures: list[str] = []
    deadline = time.monotonic() + WRITE_SECONDS
    writers = [
        threading.Thread(target=_writer, args=(cluster, n, deadline, failures), daemon=True)
        for n in range(WRITERS)
    ]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=WRITE_SECONDS + 30)
    assert not any(t.is_alive() for t in writers), "a writer hung"
    assert not failures, failures[:5]

    written = time.monotonic()
    expected = _logged_revisions(cluster.database_url, start)
    final = expected[-1][0]
    catch_up = time.monotonic() + CATCH_UP_SECONDS
    while time.monotonic() < catch_up and any(w.last < final for w in watchers):
        time.sleep(0.1)
    caught_up = time.monotonic() - written
    for watcher in watchers:
        watcher.stop.set()
    # A continuous watcher may sit in a read on its quiet stream; it records nothing more (the
    # writers are done) and ends when the workers stop.
    for thread in watch_threads:
        thread.join(timeout=0.2)

    # Creates, two patches of each and a patch of the shared runtime per round.
    assert len(expected) >= WRITERS * 4 * 2, "the writers barely wrote anything"
    assert [t for _r, t in expected].count("ADDED") == len(expected) // 4
    assert watchers[2].connections >= 3, "the resuming watcher never resumed"
    assert [w.connections for w in watchers[:2]] == [1, 1], "a continuous watcher reconnected"
    for number, watcher in enumerate(watchers):
        revisions = [r for r, _t in watcher.seen]
        assert not watcher.errors, (number, watcher.errors[:3], cluster.log_tail())
        assert revisions == sorted(set(revisions)), f"watcher {number}: repeated or out of order"
        assert watcher.seen == expected, (
            f"watcher {number}: {len(revisions)} events, log has {len(expected)}; missing "
            f"{sorted({r for r, _ in expected} - set(revisions))[:10]}"
        )
    print(
        f"{len(expected)} revisions from {WRITERS} writers; resuming watcher connected "
        f"{watchers[2].connections} times; caught up {caught_up:.2f} s after the last write; "
        f"test body took {time.monotonic() - started:.1f} s"
    )


def test_it_wakes_the_other_worker_at_once_rather_than_on_its_next_poll(
    cluster: Cluster,
) -> None:
    """Worker A serves only writes here, so it has no hub; its commits must still nudge B.

    Without the nudge B finds each write on its next poll of the log (every second), so the
    delay after the writer's response is spread over [0, 1) s; with it, milliseconds.
    """
    with cluster.client(0, timeout=30) as a:
        a.post(COLLECTION, json=runtime_manifest("prompt")).raise_for_status()
        start = int(a.get(f"{COLLECTION}/prompt").json()["metadata"]["resourceVersion"])
    watcher = Watcher(cluster, start)
    arrivals = watcher.arrivals
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    time.sleep(1.0)  # connected and idle
    answered: dict[int, float] = {}
    with cluster.client(0, timeout=30) as a:
        for i in range(12):
            body = orjson.dumps({"metadata": {"labels": {"i": str(i)}}})
            response = a.patch(f"{COLLECTION}/prompt", content=body, headers=MERGE)
            response.raise_for_status()
            answered[int(response.json()["metadata"]["resourceVersion"])] = time.monotonic()
            time.sleep(0.25)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not set(answered) <= set(arrivals):
        time.sleep(0.05)
    watcher.stop.set()
    assert set(answered) <= set(arrivals), "the watcher on B missed writes made on A"
    delays = sorted(arrivals[r] - t for r, t in answered.items())
    # Polling alone would put about 60% of the delays over 0.4 s; allow two slow ones.
    assert sum(d > 0.4 for d in delays) <= 2, [round(d, 3) for d in delays]
