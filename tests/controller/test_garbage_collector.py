"""The garbage collector in a running controller, driven over HTTP (the Django test client).

Each propagation policy, blockOwnerDeletion, orphaning, owners that are gone or were replaced
by a namesake (another uid), cycles, a long chain, a cluster-scoped owner, and what is left
alone: a live owner, a namespaced owner of a cluster-scoped object, a kind nobody serves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError

from runtimes.accounts.access import CONTROLLER_ACCOUNT
from runtimes.accounts.tokens import revoke
from runtimes.controller.loop import Controller
from runtimes.registry.kinds import ACCELERATORS
from runtimes.storage import store
from runtimes.storage.models import ApiToken
from runtimes.watch import hub
from tests.support.api import GV, ApiClient, runtime_manifest
from tests.support.controller import make_world

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

TRS = f"{GV}/namespaces/demo/trainingruntimes"


@pytest.fixture(autouse=True)
def fresh_hub() -> Iterator[None]:
    hub.shutdown()
    yield
    hub.shutdown()


class RetryingClient(ApiClient):
    """The test database is SQLite in shared-cache memory, where the controller's threads and
    the test's collide at once ("table is locked") instead of waiting: such a request is sent
    again, as the controller retries its own (test_controller_loop's `retrying`)."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        for _attempt in range(100):
            try:
                response = super().request(*args, **kwargs)
            except OperationalError:
                time.sleep(0.02)
                continue
            if response.status_code != 500:
                return response
            time.sleep(0.02)
        return super().request(*args, **kwargs)


@pytest.fixture
def alice(api: Callable[[str | None], ApiClient]) -> ApiClient:
    client = RetryingClient(None)
    client.headers = api("alice").headers
    return client


@pytest.fixture
def controller(tmp_path: Path, actors: dict[str, Any]) -> Iterator[Controller]:
    world = make_world(tmp_path)
    running = Controller(world.config)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield running
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive(), "the controller did not stop within 10 s"


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"not true within {timeout} s")
        time.sleep(0.05)


def retrying(action: Callable[[], Any]) -> Any:
    """A store call of the test thread, again while SQLite says "table is locked"."""
    for _attempt in range(100):
        try:
            return action()
        except OperationalError:
            time.sleep(0.02)
    return action()


def owner_ref(obj: dict[str, Any], *, block: bool | None = None) -> dict[str, Any]:
    ref = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def create(client: ApiClient, name: str, *owners: dict[str, Any], **meta: Any) -> dict[str, Any]:
    body = runtime_manifest(name)
    if owners:
        body["metadata"]["ownerReferences"] = list(owners)
    body["metadata"].update(meta)
    response = client.post(TRS, body)
    assert response.status_code == 201, response.json_body
    created: dict[str, Any] = response.json_body
    return created


def get(client: ApiClient, name: str) -> dict[str, Any] | None:
    response = client.get(f"{TRS}/{name}")
    if response.status_code == 404:
        return None
    assert response.status_code == 200, response.json_body
    body: dict[str, Any] = response.json_body
    return body


def gone(client: ApiClient, name: str) -> Callable[[], bool]:
    return lambda: get(client, name) is None


def settled(controller: Controller) -> None:
    """Waits until the informers have seen every write so far and the collector has nothing
    queued or in hand: whatever it was going to do about them, it has done."""
    collector = controller.collector

    def still() -> bool:
        revision = retrying(store.current_revision)
        return (
            collector.caught_up(revision)
            and collector.quiet()
            and retrying(store.current_revision) == revision
        )

    wait_for(still)
    wait_for(still)


def test_it_deletes_dependents_after_a_background_delete(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "bg-owner")
    create(alice, "bg-child", owner_ref(owner))
    create(alice, "bg-grandchild", owner_ref(get(alice, "bg-child") or {}))
    response = alice.delete(f"{TRS}/bg-owner")
    assert response.status_code == 200
    assert response.json_body["kind"] == "Status"  # the owner went at once
    wait_for(gone(alice, "bg-child"))
    wait_for(gone(alice, "bg-grandchild"))


def test_it_keeps_a_foreground_owner_until_its_blocking_dependents_are_gone(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "fg-owner")
    create(alice, "fg-blocking", owner_ref(owner, block=True), finalizers=["nodus.dev/hold"])
    create(alice, "fg-free", owner_ref(owner))
    response = alice.delete(f"{TRS}/fg-owner", {"propagationPolicy": "Foreground"})
    assert response.status_code == 200
    marked = response.json_body["metadata"]
    assert marked["finalizers"] == ["foregroundDeletion"]
    assert marked["deletionTimestamp"]
    wait_for(gone(alice, "fg-free"))
    wait_for(
        lambda: bool((get(alice, "fg-blocking") or {}).get("metadata", {}).get("deletionTimestamp"))
    )
    settled(controller)
    still = get(alice, "fg-owner")
    assert still is not None
    assert still["metadata"]["finalizers"] == ["foregroundDeletion"]
    held = alice.patch(f"{TRS}/fg-blocking", {"metadata": {"finalizers": None}})
    assert held.status_code == 200
    wait_for(gone(alice, "fg-blocking"))
    wait_for(gone(alice, "fg-owner"))


def test_a_non_blocking_dependent_does_not_hold_a_foreground_owner(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "fgn-owner")
    create(alice, "fgn-child", owner_ref(owner, block=False), finalizers=["nodus.dev/hold"])
    alice.delete(f"{TRS}/fgn-owner?propagationPolicy=Foreground")
    wait_for(gone(alice, "fgn-owner"))
    # The owner may go before the collector has come to its dependent (each is an item of its
    # own, and this one does not block the owner): look once the collector has done its work.
    settled(controller)
    child = get(alice, "fgn-child")
    assert child is not None
    assert child["metadata"]["deletionTimestamp"]


def test_it_orphans_the_dependents_then_lets_the_owner_go(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "or-owner")
    other = create(alice, "or-other")
    create(alice, "or-child", owner_ref(owner, block=True), owner_ref(other))
    response = alice.delete(f"{TRS}/or-owner", {"propagationPolicy": "Orphan"})
    assert response.json_body["metadata"]["finalizers"] == ["orphan"]
    wait_for(gone(alice, "or-owner"))
    child = get(alice, "or-child")
    assert child is not None
    assert child["metadata"]["ownerReferences"] == [owner_ref(other)]


def test_orphan_dependents_true_orphans_like_the_orphan_policy(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "od-owner")
    create(alice, "od-child", owner_ref(owner))
    alice.delete(f"{TRS}/od-owner", {"kind": "DeleteOptions", "orphanDependents": True})
    wait_for(gone(alice, "od-owner"))
    child = get(alice, "od-child")
    assert child is not None
    assert "ownerReferences" not in child["metadata"]


def test_it_collects_dependents_whose_owner_is_missing_or_another_object(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "um-owner")
    stale = {**owner_ref(owner), "uid": "00000000-0000-0000-0000-000000000000"}
    create(alice, "um-wrong-uid", stale)
    missing = {**owner_ref(owner), "name": "um-never-was"}
    create(alice, "um-missing", missing)
    kept = create(alice, "um-one-live", owner_ref(owner), stale)
    wait_for(gone(alice, "um-wrong-uid"))
    wait_for(gone(alice, "um-missing"))
    # A live owner keeps it; the reference to the replaced owner is taken out.
    wait_for(lambda: len((get(alice, "um-one-live") or {})["metadata"]["ownerReferences"]) == 1)
    assert (get(alice, "um-one-live") or {})["metadata"]["uid"] == kept["metadata"]["uid"]
    assert get(alice, "um-owner") is not None


def test_it_collects_a_dependent_after_its_owner_is_replaced_by_a_namesake(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "ns-owner", finalizers=["nodus.dev/hold"])
    create(alice, "ns-child", owner_ref(owner))
    settled(controller)
    assert get(alice, "ns-child") is not None
    # The owner goes (Orphan would cut the child loose; Background leaves it to the collector)
    # and another object takes its name before the collector looks.
    alice.delete(f"{TRS}/ns-owner")
    alice.patch(f"{TRS}/ns-owner", {"metadata": {"finalizers": None}})
    create(alice, "ns-owner")
    wait_for(gone(alice, "ns-child"))
    assert get(alice, "ns-owner") is not None


def test_it_breaks_a_cycle_of_foreground_deletions(
    alice: ApiClient, controller: Controller
) -> None:
    first = create(alice, "cy-a")
    second = create(alice, "cy-b", owner_ref(first, block=True))
    patched = alice.patch(
        f"{TRS}/cy-a", {"metadata": {"ownerReferences": [owner_ref(second, block=True)]}}
    )
    assert patched.status_code == 200, patched.json_body
    alice.delete(f"{TRS}/cy-a?propagationPolicy=Foreground")
    wait_for(gone(alice, "cy-a"))
    wait_for(gone(alice, "cy-b"))


def test_a_background_cycle_is_collected_and_a_live_one_kept(
    alice: ApiClient, controller: Controller
) -> None:
    first = create(alice, "bc-a")
    second = create(alice, "bc-b", owner_ref(first))
    alice.patch(f"{TRS}/bc-a", {"metadata": {"ownerReferences": [owner_ref(second)]}})
    settled(controller)
    assert get(alice, "bc-a") is not None
    assert get(alice, "bc-b") is not None
    alice.delete(f"{TRS}/bc-b")
    wait_for(gone(alice, "bc-a"))


@pytest.mark.parametrize("policy", ["Background", "Foreground"])
def test_it_walks_a_long_chain_one_link_at_a_time(
    alice: ApiClient, controller: Controller, policy: str
) -> None:
    previous = create(alice, "chain-0")
    for n in range(1, 40):
        previous = create(alice, f"chain-{n}", owner_ref(previous, block=True))
    alice.delete(f"{TRS}/chain-0?propagationPolicy={policy}")
    wait_for(gone(alice, "chain-39"), timeout=60)
    wait_for(gone(alice, "chain-0"))
    assert alice.get(TRS).json_body["items"] == []


def test_it_collects_dependents_of_a_cluster_scoped_owner(
    alice: ApiClient, controller: Controller
) -> None:
    body = {"metadata": {"name": "gc-test-gpu"}, "spec": {}}
    accelerator = retrying(lambda: store.create(ACCELERATORS, None, body)).object
    create(alice, "acc-child", owner_ref(accelerator))
    settled(controller)
    assert get(alice, "acc-child") is not None
    retrying(lambda: store.delete(ACCELERATORS, None, "gc-test-gpu"))
    wait_for(gone(alice, "acc-child"))


def test_it_leaves_a_cluster_scoped_object_naming_a_namespaced_owner(
    alice: ApiClient, controller: Controller
) -> None:
    runtime = create(alice, "cs-owner")
    body = {"metadata": {"name": "gc-test-owned", "ownerReferences": [owner_ref(runtime)]}}
    retrying(lambda: store.create(ACCELERATORS, None, body))
    alice.delete(f"{TRS}/cs-owner")
    settled(controller)
    owned = retrying(lambda: store.get(ACCELERATORS, None, "gc-test-owned"))
    assert owned["metadata"]["ownerReferences"] == [owner_ref(runtime)]


def test_it_leaves_an_object_whose_owner_is_of_a_kind_nobody_serves(
    alice: ApiClient, controller: Controller
) -> None:
    ref = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u-1"}
    create(alice, "unknown-kind", ref)
    settled(controller)
    assert get(alice, "unknown-kind") is not None


def test_a_revoked_controller_token_stops_the_collection(
    alice: ApiClient, controller: Controller
) -> None:
    owner = create(alice, "rv-owner")
    child = create(alice, "rv-child", owner_ref(owner))
    # The controller makes its account and token on its first write (a status, here).
    tokens = ApiToken.objects.filter(user__username=CONTROLLER_ACCOUNT)
    wait_for(lambda: retrying(tokens.exists))
    settled(controller)
    retrying(lambda: revoke(ApiToken.objects.get(user__username=CONTROLLER_ACCOUNT)))
    alice.delete(f"{TRS}/rv-owner")
    item = ("trainingruntimes.nodus.dev", "demo", "rv-child", child["metadata"]["uid"])
    # Refused (403 as the revoked account): retried with backoff, and the child stays.
    wait_for(lambda: controller.collector.queue.failures(item) >= 1)
    assert get(alice, "rv-child") is not None


def test_a_solid_owner_keeps_the_dependent_and_lets_the_waiting_owner_go(
    alice: ApiClient, controller: Controller
) -> None:
    """kube's TestSolidOwnerDoesNotBlockWaitingOwner."""
    waiting = create(alice, "so-waiting")
    solid = create(alice, "so-solid")
    create(alice, "so-child", owner_ref(waiting, block=True), owner_ref(solid))
    alice.delete(f"{TRS}/so-waiting?propagationPolicy=Foreground")
    wait_for(gone(alice, "so-waiting"))
    child = get(alice, "so-child")
    assert child is not None
    assert child["metadata"]["ownerReferences"] == [owner_ref(solid)]
