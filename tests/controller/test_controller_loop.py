"""The controller loop in threads against the store: events, polling, resync, backoff, stop.

Times from create to Ready are printed (run with ``-s``) for the layout and for a registry.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runtimes.controller.loop import Controller
from runtimes.controller.oci.layout import REF_NAME
from runtimes.controller.reconcile import runtime_type
from runtimes.storage import events, store
from runtimes.watch import hub
from tests.support.audit import fresh_log
from tests.support.controller import (
    LAYOUT_REGISTRY,
    World,
    create_runtime,
    make_world,
    publish,
    retrying,
    running,
    status_of,
    verified,
    wait_for,
)
from tests.support.registry import RunningRegistry, restart

# Threads need committed rows. Serialized rollback restores what the migrations made (the
# revision counter, project nodus) for the tests after these, as test_console_live does.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture(autouse=True)
def fresh_hub() -> Iterator[None]:
    """The controller's informer follows the process's hub; each test's database starts its
    revisions over, so each test gets a hub that starts with it."""
    hub.shutdown()
    yield
    hub.shutdown()


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def phase(namespace: str, name: str) -> str | None:
    return retrying(lambda: status_of(namespace, name)).get("phase")


def test_it_makes_a_new_runtime_ready_within_seconds_from_the_layout(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/quick:1", key=world.key)
    with running(Controller(world.config)):
        start = time.monotonic()
        retrying(lambda: create_runtime("nodus", "quick", image))
        wait_for(lambda: phase("nodus", "quick") == "Ready")
        elapsed = time.monotonic() - start
    print(f"\ncreate → Ready (image layout): {elapsed * 1000:.0f} ms")
    assert elapsed < 3.0  # the figure itself is printed; this only catches a stall
    assert verified(status_of("nodus", "quick"))["reason"] == "SignatureVerified"


def test_it_makes_a_new_runtime_ready_within_seconds_from_a_registry(
    world: World,
    registry: RunningRegistry,
) -> None:
    world.allowed.add(registry.host)
    with world.client() as client:
        image = publish(client, registry.ref("loop/quick:1"), key=world.key)
    with running(Controller(world.config)):
        start = time.monotonic()
        retrying(lambda: create_runtime("nodus", "quick", image))
        wait_for(lambda: phase("nodus", "quick") == "Ready")
        elapsed = time.monotonic() - start
    print(f"\ncreate → Ready (docker-registry): {elapsed * 1000:.0f} ms")
    assert elapsed < 3.0  # the figure itself is printed; this only catches a stall


def test_it_finds_writes_of_other_processes_in_the_event_log(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No in-process nudges: only the hub's polling of the event log can find the new runtime.
    monkeypatch.setattr(events, "subscribe", lambda listener: None)
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/polled:1", key=world.key)
    config = replace(world.config, poll_seconds=0.3)
    with running(Controller(config)) as controller:
        wait_for(lambda: controller.idle.is_set())
        retrying(lambda: create_runtime("nodus", "polled", image))
        waited = wait_for(lambda: phase("nodus", "polled") == "Ready", timeout=5)
    assert waited < 2.0


def test_it_starts_by_finishing_every_runtime_left_pending(world: World) -> None:
    images = [
        publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/backlog-{n}:1", key=world.key)
        for n in range(3)
    ]
    for n, image in enumerate(images):
        create_runtime("nodus", f"backlog-{n}", image)  # no controller yet: no contention
    assert {phase("nodus", f"backlog-{n}") for n in range(3)} == {"Pending"}
    with running(Controller(world.config)):
        wait_for(lambda: all(phase("nodus", f"backlog-{n}") == "Ready" for n in range(3)))


def test_it_backs_off_while_the_registry_is_down_and_recovers(
    world: World,
    stoppable_registry: RunningRegistry,
) -> None:
    world.allowed.add(stoppable_registry.host)
    with world.client() as client:
        image = publish(client, stoppable_registry.ref("loop/flaky:1"), key=world.key)
    stoppable_registry.stop()
    config = replace(world.config, backoff_base=0.1, backoff_max=0.8)
    with running(Controller(config)) as controller:
        retrying(lambda: create_runtime("nodus", "flaky", image))
        wait_for(lambda: "conditions" in retrying(lambda: status_of("nodus", "flaky")))
        status = retrying(lambda: status_of("nodus", "flaky"))
        assert status["phase"] == "Pending"
        assert verified(status)["reason"] == "RegistryUnavailable"
        time.sleep(2.0)
        failures = controller.queue.failures(("nodus", "flaky"))
        # 0.1, 0.2, 0.4, then every 0.8 s: a handful of tries in 2 s, not a hot loop.
        assert 2 <= failures <= 8
        assert phase("nodus", "flaky") == "Pending"
        restart(stoppable_registry)
        waited = wait_for(lambda: phase("nodus", "flaky") == "Ready")
    assert waited < 2.0
    assert controller.queue.failures(("nodus", "flaky")) == 0


def test_it_notices_a_removed_signature_on_resync(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/revoked:1", key=world.key)
    config = replace(world.config, resync_seconds=0.5)
    with running(Controller(config)):
        retrying(lambda: create_runtime("nodus", "revoked", image))
        wait_for(lambda: phase("nodus", "revoked") == "Ready")
        index_path = world.layout.root / "index.json"
        index = json.loads(index_path.read_text())
        index["manifests"] = [
            entry
            for entry in index["manifests"]
            if not entry["annotations"][REF_NAME].endswith(".sig")
        ]
        index_path.write_text(json.dumps(index))
        wait_for(lambda: phase("nodus", "revoked") == "Failed", timeout=5)
    assert verified(status_of("nodus", "revoked"))["reason"] == "SignatureMissing"


def test_it_reverifies_after_every_spec_change_and_ignores_deleted_runtimes(
    world: World,
) -> None:
    first = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/edited:1", key=world.key)
    second = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/edited:2", user="nobody")
    rt = runtime_type()
    with running(Controller(world.config)) as controller:
        retrying(lambda: create_runtime("nodus", "edited", first))
        wait_for(lambda: phase("nodus", "edited") == "Ready")

        def change(obj: dict[str, Any]) -> dict[str, Any]:
            obj["spec"]["image"] = second
            return obj

        retrying(lambda: store.mutate(rt, "nodus", "edited", change))
        wait_for(lambda: phase("nodus", "edited") == "Failed")
        status = retrying(lambda: status_of("nodus", "edited"))
        assert verified(status)["reason"] == "SignatureMissing"
        retrying(lambda: store.delete(rt, "nodus", "edited"))
        time.sleep(0.3)
        wait_for(lambda: controller.idle.is_set())
        # The DELETED event was worked off without an error (errors back off and count).
        assert controller.queue.failures(("nodus", "edited")) == 0
        assert len(controller.queue) == 0


def test_it_stops_promptly(world: World) -> None:
    controller = Controller(world.config)
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 2.0


def test_start_in_process_runs_the_embedded_controller(
    world: World, settings: Any, tmp_path: Path
) -> None:
    from runtimes.controller.loop import start_in_process, stop_in_process

    settings.DATA_DIR = tmp_path
    settings.NODUS_IMAGE_LAYOUT = str(world.layout.root)
    settings.NODUS_TRUSTED_KEYS = str(world.root / "cosign.pub")
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/embedded:1", key=world.key)
    thread = start_in_process()
    try:
        assert start_in_process() is thread  # one controller per process
        retrying(lambda: create_runtime("nodus", "embedded", image))
        wait_for(lambda: phase("nodus", "embedded") == "Ready")
    finally:
        stop_in_process()
    assert not thread.is_alive()
    assert (tmp_path / "controller.lock").exists()  # SQLite: the leader lock is a file lock


def test_the_echo_of_a_status_write_does_not_cut_a_backoff_short(world: World) -> None:
    controller = Controller(world.config)
    key = ("demo", "waiting")
    old: dict[str, Any] = {
        "metadata": {
            "namespace": "demo",
            "name": "waiting",
            "uid": "u-1",
            "generation": 1,
            "resourceVersion": "5",
        },
        "spec": {"image": "registry.example/team/trainer@sha256:" + "ab" * 32},
    }
    echo = {**old, "metadata": {**old["metadata"], "resourceVersion": "6"}}
    echo["status"] = {"phase": "Pending"}
    controller.queue.add_rate_limited(key)  # the registry was down: waiting out its backoff

    controller._updated(old, echo)
    assert controller.queue.get(0) is None  # our own status write: not brought back early

    edited = {**echo, "metadata": {**echo["metadata"], "resourceVersion": "7", "generation": 2}}
    controller._updated(echo, edited)
    assert controller.queue.get(0) == key  # a spec change is looked at at once
    controller.sources.close()


def test_its_writes_are_recorded_as_its_account_and_audited(
    world: World, settings: Any, tmp_path: Path
) -> None:
    from runtimes.accounts import auditlog
    from runtimes.accounts.access import CONTROLLER_ACCOUNT
    from runtimes.storage.models import Event

    fresh_log(settings, tmp_path)
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/audited:1", key=world.key)
    with running(Controller(world.config)):
        retrying(lambda: create_runtime("nodus", "audited", image))
        wait_for(lambda: phase("nodus", "audited") == "Ready")
    actors = set(
        Event.objects.filter(name="audited", type="MODIFIED").values_list("actor", flat=True)
    )
    assert actors == {CONTROLLER_ACCOUNT}
    auditlog.flush()
    lines = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    status_writes = [
        e
        for e in lines
        if e.get("objectRef", {}).get("name") == "audited" and e["verb"] == "update"
    ]
    assert status_writes
    assert status_writes[0]["user"]["username"] == CONTROLLER_ACCOUNT
    assert status_writes[0]["objectRef"]["apiGroup"] == "nodus.dev"
