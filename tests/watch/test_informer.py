"""The informer: list, then watch from the list's revision; deletes; a compaction past its
revision forces a re-list that misses nothing; resync from memory; its own thread and close."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import OperationalError

from runtimes.apimachinery.meta import Obj
from runtimes.registry.kinds import lookup
from runtimes.storage import compaction, store
from runtimes.watch import hub
from runtimes.watch.informer import Handlers, Informer, Key, key_of
from tests.support.api import runtime_manifest
from tests.support.hub import fresh_hub, touch


@pytest.fixture
def rt(actors: dict[str, Any]) -> Any:
    return lookup("trainingruntimes")


def rv(obj: Obj) -> int:
    return int(obj["metadata"]["resourceVersion"])


class Mirror:
    """Handlers that keep what they were told, and a copy of the objects as they learnt them."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.objects: dict[Key, Obj] = {}

    def handlers(self) -> Handlers:
        return Handlers(on_add=self.added, on_update=self.updated, on_delete=self.deleted)

    def added(self, obj: Obj) -> None:
        self.calls.append(("add", obj["metadata"]["name"], rv(obj)))
        self.objects[key_of(obj)] = obj

    def updated(self, old: Obj, new: Obj) -> None:
        self.calls.append(("update", new["metadata"]["name"], rv(old), rv(new)))
        self.objects[key_of(new)] = new

    def deleted(self, obj: Obj) -> None:
        self.calls.append(("delete", obj["metadata"]["name"], rv(obj)))
        self.objects.pop(key_of(obj), None)

    def taken(self) -> list[tuple[Any, ...]]:
        calls, self.calls = self.calls, []
        return calls


def in_store(rt: Any) -> dict[Key, Obj]:
    return {key_of(obj): obj for obj in store.list_objects(rt)[0]}


class CountingInformer(Informer):
    lists = 0

    def list(self) -> tuple[list[Obj], int]:
        self.lists += 1
        return super().list()


@pytest.mark.django_db
def test_it_lists_then_watches_from_the_lists_revision(rt: Any) -> None:
    a = rv(store.create(rt, "demo", runtime_manifest("a")).object)
    b = rv(store.create(rt, "demo", runtime_manifest("b")).object)
    made = fresh_hub()
    mirror = Mirror()
    informer = Informer(rt, mirror.handlers(), hub=made)
    informer.step()
    assert sorted(mirror.taken()) == [("add", "a", a), ("add", "b", b)]
    assert informer.last_sync_revision == store.current_revision()

    touched = touch(rt, "a", "1")
    c = rv(store.create(rt, "demo", runtime_manifest("c")).object)
    made.pull()
    informer.step()
    assert mirror.taken() == [("update", "a", a, touched), ("add", "c", c)]
    informer.step()
    assert mirror.taken() == []  # nothing twice
    assert mirror.objects == in_store(rt)
    assert informer.keys() == [("demo", "a"), ("demo", "b"), ("demo", "c")]


@pytest.mark.django_db
def test_it_delivers_deletes_with_the_last_state(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest("doomed"))
    made = fresh_hub()
    mirror = Mirror()
    informer = Informer(rt, mirror.handlers(), hub=made)
    informer.step()
    mirror.taken()
    gone = store.delete(rt, "demo", "doomed").object
    made.pull()
    informer.step()
    assert mirror.taken() == [("delete", "doomed", rv(gone))]
    assert rv(gone) == store.current_revision()  # the deletion's revision
    assert informer.get(("demo", "doomed")) is None
    assert mirror.objects == in_store(rt) == {}


@pytest.mark.django_db
def test_it_relists_when_compaction_passes_its_revision_and_misses_nothing(rt: Any) -> None:
    for name in ("kept", "changed", "deleted"):
        store.create(rt, "demo", runtime_manifest(name))
    made = fresh_hub()
    mirror = Mirror()
    informer = CountingInformer(rt, mirror.handlers(), hub=made)
    informer.step()
    synced = informer.last_sync_revision
    kept = rv(informer.get(("demo", "kept")) or {})
    mirror.taken()

    for i in range(4):
        touch(rt, "changed", str(i))
    store.delete(rt, "demo", "deleted")
    added = rv(store.create(rt, "demo", runtime_manifest("added")).object)
    last = touch(rt, "changed", "last")
    compaction.compact(keep=2)  # only `added` and the last touch are left in the log
    assert compaction.is_expired(synced)
    made.pull()
    for _round in range(3):  # cut off from the ring, resume from the log, 410: re-list
        informer.step()

    assert informer.lists == 2
    assert sorted(mirror.taken()) == [
        ("add", "added", added),
        ("delete", "deleted", synced),  # its DELETED event was compacted: the last state known
        ("update", "changed", synced - 1, last),
        ("update", "kept", kept, kept),  # unchanged, resynced as client-go's Replace does
    ]
    assert mirror.objects == in_store(rt)
    assert informer.last_sync_revision == store.current_revision()

    after = touch(rt, "kept", "after")  # and it watches on from the re-list's revision
    made.pull()
    informer.step()
    assert mirror.taken() == [("update", "kept", kept, after)]
    assert informer.lists == 2


@pytest.mark.django_db
def test_it_resyncs_every_resync_seconds_from_memory(
    rt: Any, django_assert_num_queries: Any
) -> None:
    a = rv(store.create(rt, "demo", runtime_manifest("a")).object)
    made = fresh_hub()
    now = [100.0]
    mirror = Mirror()
    informer = Informer(rt, mirror.handlers(), hub=made, resync_seconds=30, clock=lambda: now[0])
    informer.step()
    mirror.taken()
    now[0] += 29
    informer.step()
    assert mirror.taken() == []
    now[0] += 1
    with django_assert_num_queries(0):
        informer.step()
    assert mirror.taken() == [("update", "a", a, a)]
    now[0] += 29
    informer.step()
    assert mirror.taken() == []  # the next one is 30 s after the last


@pytest.mark.django_db
def test_it_hands_keys_to_one_on_change_and_survives_a_failing_handler(rt: Any) -> None:
    made = fresh_hub()
    keys: list[Key] = []

    def changed(key: Key) -> None:
        keys.append(key)
        if key[1] == "bad":
            raise RuntimeError("a bug in a handler")

    informer = Informer(rt, Handlers.on_change(changed), hub=made)
    informer.step()
    store.create(rt, "demo", runtime_manifest("bad"))
    store.create(rt, "demo", runtime_manifest("good"))
    store.delete(rt, "demo", "good")
    made.pull()
    informer.step()
    assert keys == [("demo", "bad"), ("demo", "good"), ("demo", "good")]


def create_retrying(rt: Any, name: str) -> None:
    """A create from the test thread, again if shared-cache SQLite says "table is locked" (the
    hub's thread may be reading at that moment), as the controller loop's tests do."""
    for _attempt in range(100):
        try:
            store.create(rt, "demo", runtime_manifest(name))
            return
        except OperationalError:
            time.sleep(0.02)
    store.create(rt, "demo", runtime_manifest(name))


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_it_runs_on_its_own_thread_beside_the_process_hub_and_closes_at_once(
    actors: Any,
) -> None:
    rt = lookup("trainingruntimes")
    hub.shutdown()
    added = threading.Event()
    informer = Informer(rt, Handlers(on_add=lambda obj: added.set()))
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop, 30.0), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not informer.has_synced and time.monotonic() < deadline:
            time.sleep(0.02)  # listed, and waiting on the hub
        assert informer.has_synced
        create_retrying(rt, "threaded")
        began = time.monotonic()
        assert added.wait(5)
        assert time.monotonic() - began < 0.9  # woken by the commit, not by a poll
        began = time.monotonic()
        informer.close()  # no `stop`: it waits up to 30 s for events unless woken
        thread.join(5)
        assert not thread.is_alive()
        assert time.monotonic() - began < 1.0
    finally:
        stop.set()
        informer.close()
        thread.join(5)
        hub.shutdown()
