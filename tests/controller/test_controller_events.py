"""The controller's Events: what each verdict records, with a real image layout and registry.

Each test reconciles runtimes in the store as `test_reconcile` does and reads the Events back
through the store and the recorder's public interface, so the aggregation of repeats, the TTL
and the per-namespace cap are checked on what the store keeps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runtimes.controller.recorder import COMPONENT, EventRecorder
from runtimes.controller.signing.cosign import generate_key_pair
from runtimes.registry.kinds import EVENTS
from runtimes.storage import store
from tests.support.controller import LAYOUT_REGISTRY, World, create_runtime, make_world, publish
from tests.support.registry import RunningRegistry


@pytest.fixture
def world(db: Any, tmp_path: Path) -> World:
    return make_world(tmp_path)


def events_about(namespace: str, name: str) -> list[dict[str, Any]]:
    events, _revision = store.list_objects(EVENTS, namespace)
    return [e for e in events if e["involvedObject"]["name"] == name]


class Clock:
    """A clock the test moves: the recorder's idea of now."""

    def __init__(self) -> None:
        self.now = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_it_records_a_verified_signature_as_a_normal_event(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/sft:1.0", key=world.key)
    runtime = create_runtime("nodus", "sft", image)

    world.reconciler().reconcile("nodus", "sft")

    [event] = events_about("nodus", "sft")
    assert (event["type"], event["reason"]) == ("Normal", "SignatureVerified")
    assert f"sha256:{world.key.fingerprint}" in event["message"]
    involved = event["involvedObject"]
    assert involved["kind"] == "TrainingRuntime"
    assert involved["apiVersion"] == "nodus.dev/v1beta1"
    assert involved["uid"] == runtime["metadata"]["uid"]
    assert involved["namespace"] == "nodus"
    assert involved["resourceVersion"]
    assert event["reportingComponent"] == COMPONENT
    assert event["source"] == {"component": COMPONENT}
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"]
    assert "series" not in event


def test_it_records_a_signature_from_an_untrusted_key_as_a_warning(world: World) -> None:
    stranger = generate_key_pair()
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/forged:1.0", key=stranger)
    create_runtime("nodus", "forged", image)

    reconciler = world.reconciler()
    reconciler.reconcile("nodus", "forged")
    # The same verdict again writes no status, so records nothing more.
    reconciler.reconcile("nodus", "forged", fresh=True)

    [event] = events_about("nodus", "forged")
    assert event["type"] == "Warning"
    assert event["reason"] in ("SignatureInvalid", "SignatureMissing")
    assert event["count"] == 1


def test_it_counts_up_one_event_while_the_registry_is_away(
    world: World, stoppable_registry: RunningRegistry
) -> None:
    world.allowed.add(stoppable_registry.host)
    with world.client() as client:
        image = publish(client, stoppable_registry.ref("pub/away:1"), key=world.key)
    stoppable_registry.stop()
    create_runtime("demo", "away", image)
    reconciler = world.reconciler()

    for _ in range(3):
        assert reconciler.reconcile("demo", "away").transient

    [event] = events_about("demo", "away")
    assert (event["type"], event["reason"]) == ("Warning", "RegistryUnavailable")
    assert event["count"] == 3
    assert event["series"]["count"] == 3
    assert event["series"]["lastObservedTime"].endswith("Z")


def test_it_expires_events_not_seen_for_the_ttl(world: World) -> None:
    runtime = create_runtime("demo", "ttl", f"{LAYOUT_REGISTRY}/x@sha256:{'ab' * 32}")
    clock = Clock()
    recorder = EventRecorder(now=clock, ttl_seconds=3600)
    recorder.record(runtime, "Warning", "ImageNotFound", "gone")
    recorder.record(runtime, "Normal", "DigestResolved", "found")

    clock.now += timedelta(minutes=50)
    recorder.record(runtime, "Normal", "DigestResolved", "found")  # renews this one
    clock.now += timedelta(minutes=20)
    assert recorder.expire() == 1

    [kept] = events_about("demo", "ttl")
    assert (kept["reason"], kept["count"]) == ("DigestResolved", 2)
    clock.now += timedelta(hours=2)
    # A repeat after its TTL is a new first occurrence, whether or not it was swept yet.
    again = recorder.record(runtime, "Normal", "DigestResolved", "found")
    assert again is not None
    assert again["count"] == 1
    assert "series" not in again


def test_it_keeps_at_most_the_cap_per_namespace(world: World) -> None:
    runtime = create_runtime("demo", "noisy", f"{LAYOUT_REGISTRY}/x@sha256:{'ab' * 32}")
    other = create_runtime("nodus", "quiet", f"{LAYOUT_REGISTRY}/x@sha256:{'ab' * 32}")
    clock = Clock()
    recorder = EventRecorder(now=clock, per_namespace=3)
    recorder.record(other, "Normal", "DigestResolved", "elsewhere")
    for n in range(5):
        clock.now += timedelta(seconds=1)
        recorder.record(runtime, "Warning", "ImageNotFound", f"attempt {n}")

    messages = sorted(e["message"] for e in events_about("demo", "noisy"))
    assert messages == ["attempt 2", "attempt 3", "attempt 4"]  # the least recent went first
    assert len(events_about("nodus", "quiet")) == 1  # another namespace is not touched


def test_a_record_at_the_cap_makes_room_for_a_tenth_of_it(world: World) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    runtime = create_runtime("demo", "chatty", f"{LAYOUT_REGISTRY}/x@sha256:{'ab' * 32}")
    clock = Clock()
    recorder = EventRecorder(now=clock, per_namespace=30)
    for n in range(30):
        clock.now += timedelta(seconds=1)
        recorder.record(runtime, "Warning", "ImageNotFound", f"attempt {n:02d}")
    assert len(events_about("demo", "chatty")) == 30

    clock.now += timedelta(seconds=1)
    recorder.record(runtime, "Warning", "ImageNotFound", "attempt 30")
    messages = sorted(e["message"] for e in events_about("demo", "chatty"))
    # The three least recently seen went at once; the new one was kept.
    assert messages == [f"attempt {n:02d}" for n in range(3, 31)]
    with CaptureQueriesContext(connection) as queries:
        for n in (31, 32):
            clock.now += timedelta(seconds=1)
            recorder.record(runtime, "Warning", "ImageNotFound", f"attempt {n}")
    # Below the cap again: the next records count the namespace and read no other event.
    bodies = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and "body" in q["sql"]]
    assert all("name = " in sql for sql in bodies), bodies
    assert len(events_about("demo", "chatty")) == 30


def test_a_record_below_the_cap_reads_no_other_event(world: World) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    runtime = create_runtime("demo", "busy", f"{LAYOUT_REGISTRY}/x@sha256:{'ab' * 32}")
    recorder = EventRecorder(now=Clock(), per_namespace=1000)
    for n in range(60):
        recorder.record(runtime, "Warning", "ImageNotFound", f"attempt {n}")

    with CaptureQueriesContext(connection) as queries:
        assert recorder.record(runtime, "Warning", "ImageNotFound", "attempt 60") is not None
    # The namespace's events are counted, not read: every body read names one event.
    bodies = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and "body" in q["sql"]]
    assert bodies
    assert all("name = " in sql for sql in bodies), bodies
    assert len(events_about("demo", "busy")) == 61


def test_it_records_nothing_without_the_controllers_identity(world: World) -> None:
    from runtimes.accounts.serviceaccounts import ServiceAccount

    runtime = create_runtime("demo", "anonymous", f"{LAYOUT_REGISTRY}/x@sha256:{'ab' * 32}")
    recorder = EventRecorder(ServiceAccount("not-a-token"))
    assert recorder.record(runtime, "Warning", "ImageNotFound", "gone") is None
    assert events_about("demo", "anonymous") == []
