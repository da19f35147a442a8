"""A write that meets a locked database is tried again, and answered 503 if it stays locked:
never a 500. SQLite waits out a lock for its busy timeout (20 s as shipped) before it says
"locked"; the 503 test shortens that wait on its own connection instead of holding a lock
for minutes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from runtimes.apimachinery.errors import ApiError
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from runtimes.storage.models import RevisionCounter
from tests.support.api import runtime_manifest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@contextmanager
def counter_locked_for(seconds: float) -> Iterator[None]:
    """Another connection holds the revision counter in an open write for `seconds`."""
    locked = threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                RevisionCounter.objects.filter(id=1).update(
                    value=RevisionCounter.objects.get(id=1).value
                )
                locked.set()
                time.sleep(seconds)
        finally:
            connection.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert locked.wait(5)
    try:
        yield
    finally:
        holder.join(10)


def test_a_write_waits_out_a_short_lock(actors: object) -> None:
    with counter_locked_for(0.1):
        created = store.create(TRAINING_RUNTIMES, "demo", runtime_manifest("after-lock")).object
    assert created["metadata"]["name"] == "after-lock"


@contextmanager
def busy_timeout(milliseconds: int) -> Iterator[None]:
    """This connection waits at most `milliseconds` for a lock (SQLite; PostgreSQL's
    lock_timeout), as a database under a long write would make it give up."""
    connection.ensure_connection()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"PRAGMA busy_timeout = {milliseconds}")
            yield
            cursor.execute("PRAGMA busy_timeout = 20000")
        else:
            cursor.execute(f"SET lock_timeout = {milliseconds}")
            yield
            cursor.execute("SET lock_timeout = 0")


def test_a_write_still_locked_is_503_and_writes_nothing(actors: object) -> None:
    with counter_locked_for(3.0), busy_timeout(50), pytest.raises(ApiError) as refused:
        store.create(TRAINING_RUNTIMES, "demo", runtime_manifest("never"))
    assert (refused.value.reason, refused.value.code) == ("ServiceUnavailable", 503)
    assert refused.value.retry_after == 1
    with pytest.raises(ApiError):
        store.get(TRAINING_RUNTIMES, "demo", "never")


def _annotate(obj: dict, key: str, value: str) -> dict:
    obj["metadata"].setdefault("annotations", {})[key] = value
    return obj


def test_a_patch_that_keeps_losing_the_race_lands_under_the_write_lock(actors: object) -> None:
    """kube's GuaranteedUpdate never answers a patch without preconditions 409: however many
    writers race it. Here a rival commits to the object between every read and commit of ours
    that it can; after OPTIMISTIC_TRIES losses ours takes the write lock before it reads, the
    rival waits for it, and both changes land."""
    store.create(TRAINING_RUNTIMES, "demo", runtime_manifest("contended"))
    rivals: list[threading.Thread] = []

    def rival(number: int) -> None:
        try:
            store.mutate(
                TRAINING_RUNTIMES,
                "demo",
                "contended",
                lambda obj: _annotate(obj, f"rival-{number}", "landed"),
            )
        finally:
            connection.close()

    def change(obj: dict) -> dict:
        thread = threading.Thread(target=rival, args=(len(rivals),), daemon=True)
        rivals.append(thread)
        thread.start()
        thread.join(0.5)  # commits at once, unless our write holds the lock
        return _annotate(obj, "mine", "landed")

    written = store.mutate(TRAINING_RUNTIMES, "demo", "contended", change)
    for thread in rivals:
        thread.join(10)

    assert len(rivals) == store.OPTIMISTIC_TRIES + 1
    assert written.object["metadata"]["annotations"]["mine"] == "landed"
    annotations = store.get(TRAINING_RUNTIMES, "demo", "contended")["metadata"]["annotations"]
    assert annotations == {"mine": "landed"} | {f"rival-{n}": "landed" for n in range(len(rivals))}


def test_this_processes_writers_take_turns_instead_of_polling_sqlite(actors: object) -> None:
    """On SQLite a writer that found the database locked slept in its busy handler, up to 25 ms
    a time, while the lock went free: a write waits for this process's writer instead, and
    goes the moment that one is done. (PostgreSQL queues lock waiters itself.)"""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL queues the waiters for a row lock itself")
    done = threading.Event()

    def write() -> None:
        try:
            store.create(TRAINING_RUNTIMES, "demo", runtime_manifest("in-turn"))
            done.set()
        finally:
            connection.close()

    with store.one_writer():
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        assert not done.wait(0.3)  # waiting its turn, not in the database
    assert done.wait(5)
    writer.join(5)
    assert store.get(TRAINING_RUNTIMES, "demo", "in-turn")["metadata"]["name"] == "in-turn"
