"""The hub: replay from the log then the ring, order, no duplicates, slow watchers, compaction
gaps, the after-commit wake-up of the process hub, and cross-process nudges over Redis."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from runtimes.api.listoptions import parse_list_options
from runtimes.registry.kinds import lookup
from runtimes.storage import compaction, store
from runtimes.watch import hub
from runtimes.watch.hub import Hub, HubEvent, TooOld, TooSlow
from tests.support import services
from tests.support.api import runtime_manifest
from tests.support.hub import fresh_hub, touch


@pytest.fixture
def rt(actors: dict[str, Any]) -> Any:
    return lookup("trainingruntimes")


def revisions(events: list[HubEvent]) -> list[int]:
    return [e.revision for e in events]


@pytest.mark.django_db
def test_it_replays_from_the_log_then_tails_the_ring(rt: Any) -> None:
    before = store.current_revision()
    store.create(rt, "demo", runtime_manifest("a"))
    store.create(rt, "demo", runtime_manifest("b"))
    made = fresh_hub()  # starts after those two: they are only in the log
    written = [touch(rt, "a", str(i)) for i in range(3)]
    made.pull()
    follower = made.follow(before, rt.key)
    seen = follower.next_batch(0) + follower.next_batch(0)
    assert revisions(seen) == [before + 1, before + 2, *written]
    assert [e.type for e in seen[:3]] == ["ADDED", "ADDED", "MODIFIED"]
    assert seen[2].previous is not None
    assert seen[2].previous["metadata"]["resourceVersion"] == str(before + 1)
    assert follower.next_batch(0) == []


@pytest.mark.django_db
def test_it_never_repeats_or_reorders_while_the_ring_moves(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub(ring_size=8)
    follower = made.follow(made.last, rt.key)
    seen: list[HubEvent] = []
    for round_ in range(5):
        for i in range(3):
            touch(rt, "a", f"{round_}-{i}")
        made.pull()
        seen += follower.next_batch(0)
    assert revisions(seen) == list(range(seen[0].revision, seen[0].revision + 15))


@pytest.mark.django_db
def test_it_filters_by_resource_namespace_and_predicate(rt: Any) -> None:
    from runtimes.storage.models import Project

    Project.objects.get_or_create(name="other")
    made = fresh_hub()
    start = made.last
    store.create(rt, "demo", runtime_manifest("a"))
    store.create(rt, "other", runtime_manifest("b"))
    store.create(rt, "demo", runtime_manifest("c"))
    made.pull()
    in_demo = made.follow(start, rt.key, "demo").next_batch(0)
    assert [e.name for e in in_demo] == ["a", "c"]
    assert made.follow(start, "accelerators.nodus.dev").next_batch(0) == []
    only_c = made.subscribe(start, rt.key, predicate=lambda e: e.name == "c")
    assert [e.name for e in asyncio.run(only_c.next_batch(0))] == ["c"]


@pytest.mark.django_db
def test_it_ends_a_watcher_that_falls_behind_the_ring(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub(ring_size=4)
    slow = made.follow(made.last, rt.key)
    assert slow.next_batch(0) == []  # caught up: from now on it must keep up
    for i in range(12):
        touch(rt, "a", str(i))
    made.pull()
    with pytest.raises(TooSlow):
        slow.next_batch(0)
    # A new watcher from the same point is a catch-up, served from the log.
    again = made.follow(slow.cursor, rt.key)
    assert len(again.next_batch(0)) == 8  # the log up to where the ring starts ...
    assert len(again.next_batch(0)) == 4  # ... then the ring


@pytest.mark.django_db
def test_it_refuses_a_start_point_below_the_compaction_floor(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    old = store.current_revision()
    for i in range(5):
        touch(rt, "a", str(i))
    made = fresh_hub()
    compaction.compact(keep=2)
    with pytest.raises(TooOld) as raised:
        made.follow(old, rt.key).next_batch(0)
    assert raised.value.revision == old
    assert len(made.follow(store.current_revision() - 1, rt.key).next_batch(0)) == 1


@pytest.mark.django_db
def test_it_restarts_the_ring_after_a_compaction_gap(rt: Any) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub()
    follower = made.follow(made.last, rt.key)
    follower.next_batch(0)
    for i in range(6):
        touch(rt, "a", str(i))
    compaction.compact(keep=2)  # the hub never read the first four
    made.pull()
    assert made.ring_from == store.current_revision() - 2
    with pytest.raises(TooSlow):
        follower.next_batch(0)


@pytest.mark.django_db
def test_it_reads_the_log_but_never_compacts_it(rt: Any, settings: Any) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub()
    for i in range(8):
        touch(rt, "a", str(i))
    # Narrowed after the commits (whose own hook compacts): only the hub runs from here.
    settings.NODUS_EVENT_WINDOW = 2
    made.pull()
    assert compaction.due(store.current_revision())
    assert compaction.floor() == 0  # compaction is the after-commit hook's alone


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
async def test_it_wakes_subscribers_after_a_commit_in_this_process(actors: Any) -> None:
    rt = lookup("trainingruntimes")
    hub.shutdown()
    try:
        start = await sync_to_async(store.current_revision)()
        async with hub.subscribe(start, rt.key, "demo") as events:
            created = await sync_to_async(store.create)(rt, "demo", runtime_manifest("woken"))
            began = time.monotonic()
            batch = await events.next_batch(5)
            # Woken by the commit, not found by the once-a-second poll.
            assert time.monotonic() - began < 0.9
            assert [e.object for e in batch] == [created.object]
            assert await events.next_batch(0.2) == []
    finally:
        hub.shutdown()


def test_it_hands_out_one_hub_per_process_and_restarts_after_shutdown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[Hub] = []
    monkeypatch.setattr(Hub, "start", lambda self: started.append(self))
    monkeypatch.setattr(Hub, "stop", lambda self: None)
    hub.shutdown()
    first = hub.get_hub()
    assert hub.get_hub() is first
    hub.shutdown()
    assert hub.get_hub() is not first
    assert len(started) == 2
    hub.shutdown()


@pytest.mark.services
def test_it_nudges_other_processes_over_redis(settings: Any) -> None:
    from runtimes.watch.nudge import Nudger

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:6379/3"]},
        }
    }
    heard: list[int] = []
    got = threading.Event()

    def on_nudge(revision: int) -> None:
        heard.append(revision)
        got.set()

    sender, receiver = Nudger(lambda r: None), Nudger(on_nudge)
    sender.start()
    receiver.start()
    try:
        assert sender.enabled
        deadline = time.monotonic() + 10
        while not got.is_set() and time.monotonic() < deadline:
            sender.note_local(41)  # until the receiver has joined the group
            got.wait(0.3)
        assert heard
        assert heard[-1] == 41
    finally:
        sender.stop()
        receiver.stop()


@pytest.mark.services
def test_the_projects_redis_layer_keeps_listening_through_quiet_spells(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """With the project's own Redis settings, a receiver waits through more than the 5 s
    channels-redis blocks per receive without its read timing out, then hears the next nudge."""
    from nodus_console.settings import channel_layers
    from runtimes.watch.nudge import Nudger

    services.require_redis()
    settings.CHANNEL_LAYERS = channel_layers("redis://127.0.0.1:6379/3")
    heard = threading.Event()
    sender, receiver = Nudger(lambda r: None), Nudger(lambda r: heard.set())
    sender.start()
    receiver.start()
    try:
        deadline = time.monotonic() + 10
        while not heard.is_set() and time.monotonic() < deadline:
            sender.note_local(1)  # until the receiver has joined the group
            heard.wait(0.3)
        assert heard.is_set()
        heard.clear()
        time.sleep(7)  # quiet for longer than one blocking receive
        sender.note_local(2)
        assert heard.wait(3)
    finally:
        sender.stop()
        receiver.stop()
    assert "revision nudge receive failed" not in caplog.text


async def test_it_ends_waiting_subscribers_when_the_hub_stops() -> None:
    stopping = Hub(ring_size=4)
    stopping.last = stopping.ring_from = 5  # no database needed: everything is in the ring
    waiting = asyncio.create_task(stopping.subscribe(5).next_batch(10))
    await asyncio.sleep(0.05)
    stopping.stop()
    with pytest.raises(TooSlow):
        await asyncio.wait_for(waiting, 2)


async def test_a_quiet_watch_that_times_out_leaves_no_waiter_behind() -> None:
    # Watches wake every second to check their caller (runtimes.watch.guard): on a quiet hub
    # each timeout must take its waiter back, or they would pile up until the next event.
    quiet = Hub(ring_size=4)
    quiet.last = quiet.ring_from = 5
    subscription = quiet.subscribe(5)
    for _ in range(20):
        assert await subscription.next_batch(0.01) == []
    assert quiet._waiters == {}
    cancelled = asyncio.create_task(subscription.next_batch(10))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert quiet._waiters == {}


class WatchesOnALoop:
    """Subscriptions waiting in `next_batch` on an event loop of their own thread, while the
    test writes and pulls on its own (the database's) thread; counts the hand-overs to the
    loop (`call_soon_threadsafe`: each a write to its wake-up pipe)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, made: Hub) -> None:
        self.made = made
        self.loop = asyncio.new_event_loop()
        self.handed: list[Any] = []
        original = self.loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any) -> Any:
            if callback.__module__ == hub.__name__:  # not the test's own
                self.handed.append(callback)
            return original(callback, *args)

        monkeypatch.setattr(self.loop, "call_soon_threadsafe", counted)
        self.subscriptions: list[hub.Subscription] = []
        self.tasks: list[asyncio.Task[list[HubEvent]]] = []

    def wait(self, subscriptions: list[hub.Subscription]) -> None:
        """Each of `subscriptions` waiting in next_batch (at most 10 s)."""
        self.subscriptions = subscriptions
        waiting = threading.Event()

        async def start() -> None:
            self.tasks = [asyncio.create_task(s.next_batch(10)) for s in subscriptions]
            while len(self.made._waiters) < len(self.tasks):
                await asyncio.sleep(0.01)
            waiting.set()

        self.thread = threading.Thread(target=self.loop.run_forever)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(start(), self.loop)
        assert waiting.wait(5)

    def settle(self) -> list[list[int] | None]:
        """What each got so far (None: still waiting), after the loop ran what was handed."""
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0.05), self.loop).result(5)
        return [(t.exception() or revisions(t.result())) if t.done() else None for t in self.tasks]

    def close(self) -> None:
        for task in self.tasks:
            self.loop.call_soon_threadsafe(task.cancel)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def on_a_loop(monkeypatch: pytest.MonkeyPatch) -> Any:
    made: list[WatchesOnALoop] = []

    def make(hub_: Hub) -> WatchesOnALoop:
        made.append(WatchesOnALoop(monkeypatch, hub_))
        return made[-1]

    yield make
    for watches in made:
        watches.close()


@pytest.mark.django_db
def test_an_event_wakes_every_waiting_watch_with_one_hand_over_to_their_loop(
    rt: Any, on_a_loop: Any
) -> None:
    # One per waiting watch, made under the hub's lock, was a thousand system calls an event
    # at 1,000 watches.
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub()
    watches = on_a_loop(made)
    watches.wait([made.subscribe(made.last, rt.key) for _ in range(200)])
    written = touch(rt, "a", "1")
    made.pull()
    assert watches.settle() == [[written]] * 200
    assert all(s.waited for s in watches.subscriptions)
    assert len(watches.handed) == 1


def _labelled(rt: Any, name: str, value: str) -> int:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"]["bench"] = value
        return obj

    return int(store.mutate(rt, "demo", name, change).object["metadata"]["resourceVersion"])


@pytest.mark.django_db
def test_a_watch_is_woken_only_by_the_changes_its_selection_is_for(rt: Any, on_a_loop: Any) -> None:
    store.create(rt, "demo", runtime_manifest("probe"))
    store.create(rt, "demo", runtime_manifest("other"))
    _labelled(rt, "probe", "probe")
    made = fresh_hub()
    made.pull()  # warm: a cache that comes to be ready wakes every watch
    probe = parse_list_options(rt, {"labelSelector": "bench=probe"}, None).selection
    watches = on_a_loop(made)
    watches.wait([made.subscribe(made.last, rt.key, "demo", selection=probe) for _ in range(50)])
    # Other objects' changes: nobody wakes, and every cursor moves past them.
    elsewhere = touch(rt, "other", "1")
    store.create(rt, "demo", runtime_manifest("third"))
    made.pull()
    assert watches.settle() == [None] * 50
    assert watches.handed == []
    assert {s.cursor for s in watches.subscriptions} == {made.last}
    assert made.last > elsewhere
    # Leaving the selection is a change it is for (the watch says DELETED).
    left = _labelled(rt, "probe", "gone")
    made.pull()
    assert watches.settle() == [[left]] * 50
    assert len(watches.handed) == 1


@pytest.mark.django_db
def test_a_sleeping_watch_is_woken_by_a_compaction_gap(rt: Any, on_a_loop: Any) -> None:
    store.create(rt, "demo", runtime_manifest("other"))
    made = fresh_hub()
    made.pull()  # warm: a cache that comes to be ready wakes every watch
    probe = parse_list_options(rt, {"labelSelector": "bench=probe"}, None).selection
    watches = on_a_loop(made)
    watches.wait([made.subscribe(made.last, rt.key, "demo", selection=probe)])
    for i in range(6):
        touch(rt, "other", str(i))  # none for it
    compaction.compact(keep=2)  # the hub never read the first four
    made.pull()
    # Events nobody read are gone: it may not sleep past them as if it had seen them all; it
    # wakes, and finds it can't go on (the stream ends; an informer lists again).
    assert len(watches.handed) == 1
    assert [type(got) for got in watches.settle()] == [TooSlow]


@pytest.mark.django_db
def test_a_commit_in_this_process_reaches_the_cache_at_commit_and_the_pull_adds_no_copy(
    rt: Any,
) -> None:
    from runtimes.storage import events

    made = fresh_hub()
    made.pull()  # caught up with the store: its cache ready at the store's revision
    start = made.last
    events.subscribe_commits(made.offer)
    try:
        created = store.create(rt, "demo", runtime_manifest("through"))
        revision = int(created.object["metadata"]["resourceVersion"])
        assert made.last == revision  # no pull: the commit itself brought it
        found = made.latest_entry(rt.key, ("demo", "through"))
        assert found is not None
        entry, at = found
        assert entry is not None
        assert (entry.revision, at) == (revision, revision)
        # A revision out of turn (another process wrote in between) is left to the pull.
        made.offer((revision + 5, rt.key, "demo", "later", "ADDED", "{}", ""))
        assert made.last == revision
        touched = touch(rt, "through", "1")
        assert made.last == touched
    finally:
        events.unsubscribe_commits(made.offer)
    late = touch(rt, "through", "2")  # not offered: only the pull brings it
    assert made.last == touched
    made.pull()
    follower = made.follow(start, rt.key)
    assert revisions(follower.next_batch(0)) == [revision, touched, late]


@pytest.mark.django_db
def test_a_commit_the_hub_already_holds_does_not_wake_its_pull(rt: Any) -> None:
    """Each create used to have the dispatcher read the counter and the log again, to find
    nothing: the commit had offered its event already. Only a revision it lacks wakes it."""
    from runtimes.storage import events

    made = fresh_hub()
    made.pull()
    events.subscribe_commits(made.offer)
    events.subscribe(made.wake)
    try:
        made._wake.clear()
        store.create(rt, "demo", runtime_manifest("held"))
        assert not made._wake.is_set()
        made.wake(made.last + 1)  # another process's commit, say: only the log has it
        assert made._wake.is_set()
    finally:
        events.unsubscribe(made.wake)
        events.unsubscribe_commits(made.offer)


@pytest.mark.django_db
def test_events_below_the_hot_ones_keep_only_their_text_and_read_the_same(
    rt: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub, "HOT_EVENTS", 3)
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub()
    written = [touch(rt, "a", str(i)) for i in range(6)]
    made.pull()
    seen = made.follow(made.ring_from, rt.key).next_batch(0)
    assert revisions(seen) == written
    cold, hot = seen[:3], seen[3:]
    assert all(e.parsed_object is None and e.parsed_previous is None for e in cold)
    assert all(e.parsed_object is not None and e.parsed_previous is not None for e in hot)
    # A released event reads as it was: parsed again from its text, once for every reader.
    first = cold[1]
    assert first.object["metadata"]["annotations"]["v"] == "1"
    assert first.object["metadata"]["resourceVersion"] == str(written[1])
    assert first.previous is not None
    assert first.previous["metadata"]["annotations"]["v"] == "0"
    assert first.object is first.object


class _Failing:
    """A selection that fails on every object."""

    def matches(self, obj: Any) -> bool:
        raise ValueError("no")


@pytest.mark.django_db
def test_a_selection_that_fails_wakes_its_watch_and_leaves_the_hub_running(
    rt: Any, on_a_loop: Any
) -> None:
    store.create(rt, "demo", runtime_manifest("a"))
    made = fresh_hub()
    made.pull()
    watches = on_a_loop(made)
    watches.wait([made.subscribe(made.last, rt.key, "demo", selection=_Failing())])
    written = touch(rt, "a", "1")
    made.pull()  # does not raise
    assert len(watches.handed) == 1
    assert watches.settle() == [[written]]  # the watch's own stream applies its selection
