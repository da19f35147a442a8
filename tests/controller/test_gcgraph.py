"""The collector's ownership graph: the work each change calls for, and no recursion on chains."""

from __future__ import annotations

from typing import Any

from runtimes.controller.gcgraph import Graph, node_of

KIND = "trainingruntimes.nodus.dev"


def runtime(name: str, *owners: dict[str, Any], **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": "demo", "uid": f"uid-{name}", **meta},
    }
    if owners:
        body["metadata"]["ownerReferences"] = list(owners)
    return body


def ref(owner: dict[str, Any], block: bool = False) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "blockOwnerDeletion": block,
    }


def item(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    return node_of(KIND, obj).item


def test_it_asks_for_a_look_at_dependents_of_unseen_or_mismatched_owners() -> None:
    graph = Graph()
    owner = runtime("owner")
    assert graph.observe(node_of(KIND, owner)) == []
    child = runtime("child", ref(owner))
    assert graph.observe(node_of(KIND, child)) == []  # its owner is there, as named
    orphan = runtime("orphan", {**ref(owner), "uid": "uid-gone"})
    assert graph.observe(node_of(KIND, orphan)) == [item(orphan)]
    renamed = runtime("renamed", {**ref(owner), "name": "someone-else"})
    assert graph.observe(node_of(KIND, renamed)) == [item(renamed)]
    # The owner goes: its dependents are looked at (the one naming it by uid, too).
    assert set(graph.forget(node_of(KIND, owner))) == {item(child), item(renamed)}


def test_a_foreground_owner_brings_its_dependents_and_blocking_changes_bring_it_back() -> None:
    graph = Graph()
    owner = runtime("owner")
    graph.observe(node_of(KIND, owner))
    child = runtime("child", ref(owner, block=True))
    graph.observe(node_of(KIND, child))
    deleting = runtime(
        "owner", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["foregroundDeletion"]
    )
    assert set(graph.observe(node_of(KIND, deleting))) == {item(deleting), item(child)}
    assert [n.item for n in graph.blocking_dependents("uid-owner")] == [item(child)]
    # The dependent stops blocking: the owner is looked at again.
    loose = runtime("child", ref(owner, block=False))
    assert item(deleting) in graph.observe(node_of(KIND, loose))
    assert graph.blocking_dependents("uid-owner") == []
    # The dependent goes: the owner is looked at again.
    assert graph.forget(node_of(KIND, loose)) == [item(deleting)]


def test_a_long_chain_costs_one_step_per_change() -> None:
    graph = Graph()
    previous = runtime("link-0")
    graph.observe(node_of(KIND, previous))
    for n in range(1, 20_000):
        current = runtime(f"link-{n}", ref(previous, block=True))
        assert graph.observe(node_of(KIND, current)) == []
        previous = current
    # Deleting the head names only its direct dependent: nothing walks the chain.
    assert graph.forget(node_of(KIND, runtime("link-0"))) == [item(runtime("link-1"))]
    assert len(graph) == 19_999
