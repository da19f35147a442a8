"""The watch generator in-process, without a database: bookmark cadence, selector typing and
Table encoding."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from runtimes.api import watch, watchstream
from runtimes.api.listoptions import ListOptions, selection
from runtimes.registry.kinds import lookup
from runtimes.watch import hub as hub_module
from runtimes.watch.hub import Hub, HubEvent

RT = lookup("trainingruntimes")


def obj(name: str, rv: int, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": RT.api_version,
        "kind": RT.kind,
        "metadata": {
            "name": name,
            "namespace": "demo",
            "resourceVersion": str(rv),
            "labels": labels,
        },
        "spec": {"task": "SFT"},
    }


@pytest.fixture
def quiet_hub(monkeypatch: pytest.MonkeyPatch) -> Hub:
    """A hub with nothing to say, standing in for the process hub."""
    made = Hub(ring_size=4)
    made.last = made.ring_from = 5

    @asynccontextmanager
    async def subscribe(after: int, *args: Any, **kw: Any) -> AsyncIterator[Any]:
        yield made.subscribe(after, *args, **kw)

    monkeypatch.setattr(hub_module, "subscribe", subscribe)
    return made


async def test_it_bookmarks_once_per_interval_and_at_the_end(quiet_hub: Hub, settings: Any) -> None:
    settings.NODUS_WATCH_BOOKMARK_SECONDS = 0.5
    opts = ListOptions(allow_bookmarks=True, timeout_seconds=2)
    plan = watchstream.WatchPlan(RT, "demo", opts, 5)
    started = time.monotonic()
    stamps = [
        (time.monotonic() - started, event["type"])
        async for event in watchstream.watch_events(plan)
    ]
    assert [kind for _at, kind in stamps] == ["BOOKMARK"] * 4  # 0.5, 1.0, 1.5, then at 2.0
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(stamps)]
    assert all(gap > 0.4 for gap in gaps), stamps


def test_it_types_changes_against_the_selection() -> None:
    gold = selection(RT, "tier=gold", "")
    before, after = obj("a", 1, tier="gold"), obj("a", 2, tier="silver")
    left = watchstream.typed(HubEvent(2, RT.key, "demo", "a", "MODIFIED", after, before), gold)
    assert left is not None
    kind, shown = left
    assert kind == "DELETED"
    assert shown["metadata"]["labels"] == {"tier": "gold"}  # the previous object ...
    assert shown["metadata"]["resourceVersion"] == "2"  # ... at the event's revision
    back = watchstream.typed(HubEvent(3, RT.key, "demo", "a", "MODIFIED", before, after), gold)
    assert back == ("ADDED", before)
    stay = watchstream.typed(HubEvent(4, RT.key, "demo", "a", "MODIFIED", before, before), gold)
    assert stay == ("MODIFIED", before)
    away = watchstream.typed(HubEvent(5, RT.key, "demo", "a", "MODIFIED", after, after), gold)
    assert away is None
    gone = watchstream.typed(HubEvent(6, RT.key, "demo", "a", "DELETED", before, before), gold)
    assert gone == ("DELETED", before)


async def test_watches_on_equal_selections_work_out_an_events_verdict_once(
    quiet_hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A herd of informers on one selector: each event is matched for the first and read by
    # the rest, through the one selection object their hub interest holds.
    quiet_hub.ring_size = 100
    with quiet_hub._lock:
        quiet_hub._append(
            [HubEvent(6 + i, RT.key, "demo", f"r{i}", "ADDED", obj(f"r{i}", 6 + i, tier=tier), None)
             for i, tier in enumerate(["gold", "silver", "gold"])]
        )  # fmt: skip
    worked_out: list[int] = []
    real = watchstream._typed

    def counting(event: HubEvent, chosen: Any) -> Any:
        worked_out.append(event.revision)
        return real(event, chosen)

    monkeypatch.setattr(watchstream, "_typed", counting)

    async def names() -> list[str]:
        opts = ListOptions(timeout_seconds=1, selection=selection(RT, "tier=gold", ""))
        plan = watchstream.WatchPlan(RT, "demo", opts, 5)
        return [
            orjson.loads(watchstream.encoded(e))["object"]["metadata"]["name"]
            async for chunk in watchstream.watch_chunks(plan)
            for e in chunk
        ]

    streams = await asyncio.gather(*(names() for _ in range(3)))
    assert streams == [["r0", "r2"]] * 3
    assert sorted(worked_out) == [6, 7, 8]  # once per event, not once per watch


def test_a_verdict_is_kept_for_that_selection_object_only_and_goes_with_the_parse() -> None:
    gold, also_gold = selection(RT, "tier=gold", ""), selection(RT, "tier=gold", "")
    text = orjson.dumps(obj("a", 2, tier="gold")).decode()
    event = HubEvent(2, RT.key, "demo", "a", "ADDED", orjson.loads(text), None, text)
    first = watchstream.typed(event, gold)
    assert first is not None
    assert watchstream.typed(event, gold) is first
    assert watchstream.typed(event, also_gold) == first  # equal, but worked out again
    assert len(event.verdicts) == 2
    event.release()
    assert event.verdicts == {}  # it held the parsed object the release lets go


def test_it_sends_table_columns_with_the_first_event_only() -> None:
    plan = watchstream.WatchPlan(RT, "demo", ListOptions(), 0, table_version="v1")
    encoder = watchstream.Encoder(plan)
    first = encoder.event("ADDED", obj("a", 1))["object"]
    second = encoder.event("MODIFIED", obj("a", 2))["object"]
    assert first["columnDefinitions"][0]["name"] == "Name"
    assert second["columnDefinitions"] is None
    assert second["metadata"] == {"resourceVersion": "2"}


@pytest.mark.parametrize(
    "rendering",
    [{"table_version": "v1"}, {"metadata_version": "v1"}, {}],
    ids=["table", "metadata", "json"],
)
def test_a_change_is_encoded_once_for_every_watcher_of_one_rendering(
    rendering: dict[str, str],
) -> None:
    import orjson

    def encoder() -> watchstream.Encoder:
        plan = watchstream.WatchPlan(RT, "demo", ListOptions(), 0)
        for name, version in rendering.items():
            setattr(plan, name, version)
        return watchstream.Encoder(plan)

    event = HubEvent(7, RT.key, "demo", "a", "MODIFIED", obj("a", 7), obj("a", 6))
    watchers = [encoder() for _ in range(3)]
    first, second, third = (w.change("MODIFIED", event.object, event) for w in watchers)
    assert len(event.encoded) == 1  # one encoding, shared
    assert first is second is third  # the same bytes, written by each
    expected = orjson.dumps(encoder().event("MODIFIED", event.object))
    assert first == expected  # what each watcher would have made alone
    if "table_version" in rendering:
        # The columns went with each watcher's first event: the next ones are another encoding.
        later = HubEvent(8, RT.key, "demo", "a", "MODIFIED", obj("a", 8), obj("a", 7))
        shown = orjson.loads(
            watchstream.encoded(watchers[0].change("MODIFIED", later.object, later))
        )
        assert shown["object"]["columnDefinitions"] is None


async def test_a_backlog_goes_out_in_chunks_of_the_events_at_hand(quiet_hub: Hub) -> None:
    # 40 changes came while this watcher was away: they are written as a few chunks (a write
    # each), never more than FAIRNESS_EVERY_CHANGE events before the loop runs other work.
    quiet_hub.ring_size = 100
    with quiet_hub._lock:
        quiet_hub._append(
            [HubEvent(6 + i, RT.key, "demo", f"r{i:02d}", "ADDED", obj(f"r{i:02d}", 6 + i), None)
             for i in range(40)]
        )  # fmt: skip
    plan = watchstream.WatchPlan(RT, "demo", ListOptions(timeout_seconds=1), 5)
    chunks = [chunk async for chunk in watchstream.watch_chunks(plan)]
    assert [len(chunk) for chunk in chunks] == [16, 16, 8]
    names = [
        orjson.loads(watchstream.encoded(e))["object"]["metadata"]["name"]
        for c in chunks
        for e in c
    ]
    assert names == [f"r{i:02d}" for i in range(40)]
    # On the HTTP stream each chunk is one write of newline-delimited events, as kube's.
    plan = watchstream.WatchPlan(RT, "demo", ListOptions(timeout_seconds=1), 5)
    writes = [w async for w in watch._lines(plan)]
    assert writes[0] == b""  # the headers, flushed
    assert [w.count(b"\n") for w in writes[1:]] == [16, 16, 8]
    assert all(w.endswith(b"\n") for w in writes[1:])
