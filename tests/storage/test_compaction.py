"""Compaction of the event log: the window kept, the floor, and what answers 410 afterwards."""

from __future__ import annotations

from typing import Any

import pytest

from runtimes.registry.kinds import lookup
from runtimes.storage import compaction, snapshots, store
from runtimes.storage.models import Event, RevisionCounter
from tests.support.api import runtime_manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def rt(actors: dict[str, Any]) -> Any:
    return lookup("trainingruntimes")


def write(rt: Any, count: int) -> list[int]:
    store.create(rt, "demo", runtime_manifest("a"))
    revisions = [store.current_revision()]
    for i in range(count - 1):

        def change(obj: dict[str, Any], i: int = i) -> dict[str, Any]:
            obj["metadata"].setdefault("annotations", {})["i"] = str(i)
            return obj

        store.mutate(rt, "demo", "a", change)
        revisions.append(store.current_revision())
    return revisions


def test_it_keeps_exactly_the_window_and_raises_the_floor(rt: Any) -> None:
    revisions = write(rt, 10)
    floor = compaction.compact(keep=4)
    kept = list(Event.objects.order_by("revision").values_list("revision", flat=True))
    assert kept == revisions[-4:]
    assert floor == revisions[-4] == compaction.floor()
    assert RevisionCounter.objects.get(pk=1).compacted == floor


def test_it_never_moves_the_floor_back(rt: Any) -> None:
    write(rt, 10)
    high = compaction.compact(keep=2)
    assert compaction.compact(keep=8) == high
    assert compaction.floor() == high


def test_it_knows_which_start_points_are_expired(rt: Any) -> None:
    revisions = write(rt, 6)
    compaction.compact(keep=3)
    # A start point needs every event after it: the one just below the floor still works.
    assert compaction.oldest_resumable() == revisions[-3] - 1
    assert not compaction.is_expired(revisions[-4])
    assert compaction.is_expired(revisions[-5])
    message = compaction.too_old(revisions[0], compaction.oldest_resumable()).message
    assert message == f"too old resource version: {revisions[0]} ({revisions[-4]})"


def test_it_is_due_a_tenth_past_the_window(rt: Any) -> None:
    revisions = write(rt, 12)
    assert compaction.due(revisions[-1], keep=10)
    assert not compaction.due(revisions[-1], keep=11)


def test_it_reads_the_window_from_settings(settings: Any) -> None:
    settings.NODUS_EVENT_WINDOW = 123
    assert compaction.window() == 123


def test_it_expires_snapshots_older_than_the_floor(rt: Any) -> None:
    revisions = write(rt, 6)
    compaction.compact(keep=2)
    with pytest.raises(snapshots.Compacted):
        snapshots.at(rt.key, "demo", revisions[0])
    kept = snapshots.at(rt.key, "demo", revisions[-2])
    [obj] = kept.bodies(kept.keys)
    assert obj["metadata"]["resourceVersion"] == str(revisions[-2])


class InlineThread:
    """Runs the compaction thread's work at start(), inside the test's transaction."""

    def __init__(self, target: Any, **_kw: Any) -> None:
        self.target = target

    def start(self) -> None:
        self.target()


def test_it_compacts_every_so_many_commits_without_a_hub(
    rt: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction.threading, "Thread", InlineThread)
    monkeypatch.setattr(compaction, "CHECK_EVERY", 4)
    revisions = write(rt, 12)  # each commit's hook ran: the default window keeps them all
    settings.NODUS_EVENT_WINDOW = 3
    compaction.after_commit(next(r for r in revisions[6:] if r % 4))
    assert compaction.floor() == 0  # only every fourth revision looks
    compaction.after_commit(next(r for r in revisions[6:] if r % 4 == 0))
    assert compaction.floor() == revisions[-1] - 3 + 1  # the window, from the current revision


def test_it_checks_every_tenth_of_the_window_between_bounds(settings: Any) -> None:
    settings.NODUS_EVENT_WINDOW = 100_000
    assert compaction.check_every() == compaction.CHECK_EVERY == 256
    settings.NODUS_EVENT_WINDOW = 1_000
    assert compaction.check_every() == 100
    settings.NODUS_EVENT_WINDOW = 60  # the live watch tests' window: compacted within 80 writes
    assert compaction.check_every() == compaction.MIN_CHECK_EVERY == 8
