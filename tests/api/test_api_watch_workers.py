"""Watch across workers: two daphne processes on one PostgreSQL database and one Redis.

Writes go to one worker, watches run on both: each watcher must see every revision once, in
order, and the same sequence as the other; a write on worker A must reach a watcher on worker
B through the Redis nudge, well before B's one-second poll of the event log would find it.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import liveserver, services
from tests.support.watch_live import DEMO, Watcher, manifest

pytestmark = pytest.mark.services


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[liveserver.LiveServer]]:
    services.require_redis()
    with services.temp_database("nodus_watch") as database_url:
        yield from _start_workers(tmp_path_factory, database_url)


def _start_workers(
    tmp_path_factory: pytest.TempPathFactory, database_url: str
) -> Iterator[list[liveserver.LiveServer]]:
    extra = {
        "DATABASE_URL": database_url,
        "REDIS_URL": f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/7",
    }
    plain = liveserver.server_environment
    liveserver.server_environment = lambda data_dir: {**plain(data_dir), **extra}
    started: list[liveserver.LiveServer] = []
    try:
        first: Path = tmp_path_factory.mktemp("worker-a")
        tokens = liveserver.prepare(first)
        started.append(liveserver.start(first, tokens))
        started.append(liveserver.start(tmp_path_factory.mktemp("worker-b"), tokens))
        yield started
    finally:
        liveserver.server_environment = plain
        for server in started:
            liveserver.stop(server)


def revision(event: dict[str, Any]) -> int:
    return int(event["object"]["metadata"]["resourceVersion"])


def test_every_worker_delivers_the_same_ordered_stream(
    workers: list[liveserver.LiveServer],
) -> None:
    a, b = workers
    tag = uuid.uuid4().hex[:10]
    with a.client("alice") as client:
        start = client.get(DEMO).json()["metadata"]["resourceVersion"]
    path = f"{DEMO}?watch=1&labelSelector=t%3D{tag}&resourceVersion={start}&timeoutSeconds=30"
    watchers = [Watcher(server.client("alice"), path) for server in (a, b)]
    written: list[int] = []
    lock = threading.Lock()

    def writer(server: liveserver.LiveServer, name: str) -> None:
        with server.client("alice") as client:
            client.post(DEMO, json=manifest(name, {"t": tag})).raise_for_status()
            for i in range(10):
                response = client.patch(
                    f"{DEMO}/{name}",
                    content=f'{{"metadata":{{"annotations":{{"i":"{i}"}}}}}}',
                    headers={"Content-Type": "application/merge-patch+json"},
                )
                response.raise_for_status()
                with lock:
                    written.append(int(response.json()["metadata"]["resourceVersion"]))

    # Writers on both workers at once: the revisions interleave across processes.
    threads = [
        threading.Thread(target=writer, args=(server, f"{side}-{i}-{tag}"))
        for side, server in (("a", a), ("b", b))
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        streams = [w.take(4 * 11, timeout=15) for w in watchers]
    finally:
        for w in watchers:
            w.close()
    seen_a, seen_b = ([revision(e) for e in s] for s in streams)
    assert seen_a == seen_b
    assert seen_a == sorted(set(seen_a))
    assert set(written) <= set(seen_a)


def test_a_write_on_one_worker_reaches_a_watcher_on_another_at_once(
    workers: list[liveserver.LiveServer],
) -> None:
    a, b = workers
    tag = uuid.uuid4().hex[:10]
    with a.client("alice") as client:
        start = client.get(DEMO).json()["metadata"]["resourceVersion"]
        path = f"{DEMO}?watch=1&labelSelector=t%3D{tag}&resourceVersion={start}"
        watcher = Watcher(b.client("alice"), path + "&timeoutSeconds=30")
        latencies: list[float] = []
        try:
            for i in range(6):
                sent = time.monotonic()
                client.post(DEMO, json=manifest(f"n{i}-{tag}", {"t": tag})).raise_for_status()
                event = watcher.next(timeout=10)
                assert event is not None
                assert event["object"]["metadata"]["name"] == f"n{i}-{tag}"
                latencies.append(time.monotonic() - sent)
                time.sleep(0.3)  # let B go idle, so only a nudge (or a poll) wakes it
        finally:
            watcher.close()
    # Polling alone would average about half a second; nudges arrive in milliseconds.
    assert statistics.median(latencies) < 0.3, latencies


def test_the_workers_answer_lists_at_the_same_revision(
    workers: list[liveserver.LiveServer],
) -> None:
    a, b = workers
    with a.client("alice") as on_a, b.client("alice") as on_b:
        for _ in range(2):
            on_a.post(DEMO, json=manifest(f"list-{uuid.uuid4().hex[:8]}")).raise_for_status()
        first = on_a.get(DEMO, params={"limit": 1}).json()
        # A continue token from one worker is good on the other: the snapshot is in the SQL.
        second = on_b.get(DEMO, params={"limit": 1, "continue": first["metadata"]["continue"]})
    assert second.status_code == 200
    assert second.json()["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
