"""The watch cache's rules, without a database: events applied in order with the revision guard,
snapshots at older revisions taken back from later events, the label index kept in step."""

from __future__ import annotations

from typing import Any

import orjson

from runtimes.storage.eventlog import HubEvent
from runtimes.watch.cache import WatchCache

R = "trainingruntimes.nodus.dev"


def obj(name: str, rv: int, ns: str = "demo", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "resourceVersion": str(rv), "labels": labels},
        "spec": {"task": "SFT"},
    }


def event(rv: int, type_: str, now: dict[str, Any], before: dict[str, Any] | None) -> HubEvent:
    meta = now["metadata"]
    return HubEvent(rv, R, meta["namespace"], meta["name"], type_, now, before)


def names(cache: WatchCache, revision: int, since: list[HubEvent], **kw: Any) -> list[str]:
    snap = cache.snapshot(R, "demo", revision, since, **kw)
    return [name for _ns, name in snap.keys]


def test_rows_read_at_warm_up_are_never_overwritten_by_older_events() -> None:
    cache = WatchCache()
    a2 = obj("a", 2, tier="gold")
    cache.load([(R, "demo", "a", 2, orjson.dumps(a2).decode())])
    cache.apply([event(1, "ADDED", obj("a", 1, tier="silver"), None)])  # older than the row
    snap = cache.snapshot(R, "demo", 2, [])
    assert snap.bodies(snap.keys) == [a2]
    cache.apply([event(3, "DELETED", obj("a", 3), a2)])
    assert names(cache, 3, []) == []


def test_a_snapshot_takes_later_changes_back_oldest_last() -> None:
    cache = WatchCache()
    a1, b2 = obj("a", 1, tier="gold"), obj("b", 2, tier="gold")
    a3 = obj("a", 3, tier="silver")
    c4 = obj("c", 4, tier="gold")
    later = [
        event(1, "ADDED", a1, None),
        event(2, "ADDED", b2, None),
        event(3, "MODIFIED", a3, a1),
        event(4, "ADDED", c4, None),
        event(5, "DELETED", obj("b", 5, tier="gold"), b2),
    ]
    cache.apply(later)
    assert names(cache, 5, later) == ["a", "c"]
    at2 = cache.snapshot(R, "demo", 2, later)
    assert [o["metadata"]["resourceVersion"] for o in at2.bodies(at2.keys)] == ["1", "2"]
    assert names(cache, 3, later) == ["a", "b"]
    assert names(cache, 0, later) == []


def test_the_label_index_follows_labels_as_they_change_and_go() -> None:
    cache = WatchCache()
    a1 = obj("a", 1, tier="gold")
    b2 = obj("b", 2, tier="silver")
    a3 = obj("a", 3, tier="silver")
    cache.apply([event(1, "ADDED", a1, None), event(2, "ADDED", b2, None)])
    assert names(cache, 2, [], lookups=(("label", "tier", ("gold",)),)) == ["a"]
    cache.apply([event(3, "MODIFIED", a3, a1)])
    assert names(cache, 3, [], lookups=(("label", "tier", ("gold",)),)) == []
    assert names(cache, 3, [], lookups=(("label", "tier", ("silver",)),)) == ["a", "b"]
    cache.apply([event(4, "DELETED", obj("b", 4, tier="silver"), b2)])
    assert names(cache, 4, [], lookups=(("label", "tier", ("silver",)),)) == ["a"]


def test_a_narrowed_snapshot_knows_the_scopes_last_key_and_older_ones_are_not_narrowed() -> None:
    cache = WatchCache()
    a1, z2 = obj("a", 1, tier="gold"), obj("z", 2)
    later = [event(1, "ADDED", a1, None), event(2, "ADDED", z2, None)]
    cache.apply(later)
    narrowed = cache.snapshot(R, "demo", 2, [], lookups=(("label", "tier", ("gold",)),))
    assert (narrowed.keys, narrowed.last) == ([("demo", "a")], ("demo", "z"))
    # At revision 1 the index (of the current state) cannot answer: every key, taken back.
    older = cache.snapshot(R, "demo", 1, later, lookups=(("label", "tier", ("gold",)),))
    assert older.keys == [("demo", "a")]


def test_namespaces_and_kinds_are_kept_apart() -> None:
    cache = WatchCache()
    cache.apply(
        [
            event(1, "ADDED", obj("a", 1, ns="demo"), None),
            event(2, "ADDED", obj("a", 2, ns="other"), None),
            HubEvent(3, "accelerators.nodus.dev", "", "h100", "ADDED", obj("h100", 3, ns=""), None),
        ]
    )
    assert cache.snapshot(R, None, 3, []).keys == [("demo", "a"), ("other", "a")]
    assert cache.snapshot(R, "other", 3, []).keys == [("other", "a")]
    assert cache.snapshot("accelerators.nodus.dev", None, 3, []).keys == [("", "h100")]
