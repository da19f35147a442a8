"""Hand-driven hubs and quick writes, for the tests of the hub and of the informer on it."""

from __future__ import annotations

from typing import Any

from runtimes.storage import store
from runtimes.watch.hub import Hub


def fresh_hub(ring_size: int = 100) -> Hub:
    """A hub driven by hand: no thread, `pull()` when the test says so."""
    made = Hub(ring_size=ring_size)
    made.last = made.ring_from = store.current_revision()
    return made


def touch(rt: Any, name: str, value: str) -> int:
    """Sets an annotation on demo/`name`; returns the new revision."""

    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].setdefault("annotations", {})["v"] = value
        return obj

    return int(store.mutate(rt, "demo", name, change).object["metadata"]["resourceVersion"])
