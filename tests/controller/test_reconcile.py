"""One reconcile pass against real parts: the store, an image layout, docker-registry, cosign.

Each test creates a runtime in the store, runs ``Reconciler.reconcile`` once and reads the
status back, so every failure reason is checked end to end, down to what the store keeps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtimes.controller.oci.auth import Credential
from runtimes.controller.reconcile import Reconciler, runtime_type
from runtimes.controller.signing.cosign import generate_key_pair
from runtimes.storage import store
from runtimes.storage.models import Event
from tests.support.controller import (
    LAYOUT_REGISTRY,
    World,
    create_runtime,
    make_world,
    publish,
    status_of,
    verified,
)
from tests.support.registry import RunningRegistry, restart, stub_server


@pytest.fixture
def world(db: Any, tmp_path: Path) -> World:
    return make_world(tmp_path)


def change_image(namespace: str, name: str, image: str) -> None:
    def change(obj: dict[str, Any]) -> dict[str, Any]:
        obj["spec"]["image"] = image
        return obj

    store.mutate(runtime_type(), namespace, name, change)


# -- the embedded default: images in the layout ------------------------------------------------


def test_it_makes_a_signed_managed_runtime_ready_and_verified(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/sft:1.0", key=world.key)
    created = create_runtime("nodus", "sft", image)
    assert created["status"]["phase"] == "Pending"

    outcome = world.reconciler().reconcile("nodus", "sft")

    assert outcome.written
    status = status_of("nodus", "sft")
    condition = verified(status)
    assert (status["phase"], status["managed"], status["observedGeneration"]) == ("Ready", True, 1)
    assert status["imageDigest"] == image.split("@")[1]
    assert status["imageUser"] == "trainer"
    assert (condition["status"], condition["reason"]) == ("True", "SignatureVerified")
    assert f"sha256:{world.key.fingerprint}" in condition["message"]
    assert condition["observedGeneration"] == 1
    after = store.get(runtime_type(), "nodus", "sft")
    assert after["spec"] == created["spec"]
    assert after["metadata"]["generation"] == created["metadata"]["generation"]


def test_it_resolves_an_unsigned_user_runtime_to_root_without_a_user(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/examples/tiny:0.1", user=None)
    create_runtime("demo", "tiny", image)

    world.reconciler().reconcile("demo", "tiny")

    status = status_of("demo", "tiny")
    assert (status["phase"], status["managed"], status["imageUser"]) == ("Ready", False, "root")
    assert (verified(status)["status"], verified(status)["reason"]) == ("True", "DigestResolved")


def test_it_fails_a_managed_runtime_whose_layout_blob_is_corrupt(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/broken:1", key=world.key)
    config_digest = world.layout.resolve(image).config_digest
    (world.layout.root / "blobs" / "sha256" / config_digest.split(":")[1]).write_bytes(b"{}")
    create_runtime("nodus", "broken", image)

    world.reconciler().reconcile("nodus", "broken")

    status = status_of("nodus", "broken")
    assert (status["phase"], verified(status)["reason"]) == ("Failed", "DigestMismatch")
    assert config_digest in verified(status)["message"]
    assert "imageDigest" not in status


def test_it_writes_nothing_when_nothing_changed(world: World) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/steady:1", key=world.key)
    create_runtime("nodus", "steady", image)
    reconciler = world.reconciler()
    reconciler.reconcile("nodus", "steady")
    before = store.get(runtime_type(), "nodus", "steady")
    events = Event.objects.count()

    cached = reconciler.reconcile("nodus", "steady")
    fresh = world.reconciler().reconcile("nodus", "steady", fresh=True)

    assert not cached.written
    assert not fresh.written
    assert store.get(runtime_type(), "nodus", "steady") == before
    assert Event.objects.count() == events


def test_it_moves_last_transition_time_only_when_the_status_flips(world: World) -> None:
    signed = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/flip:1", key=world.key)
    resigned = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/flip:2", key=world.key, user="x")
    unsigned = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/flip:3", user="nobody")
    create_runtime("nodus", "flip", signed)
    reconciler = world.reconciler()
    reconciler.reconcile("nodus", "flip")
    first = verified(status_of("nodus", "flip"))

    change_image("nodus", "flip", resigned)
    assert status_of("nodus", "flip")["phase"] == "Pending"  # the strategy, on a spec change
    reconciler.reconcile("nodus", "flip")
    second = status_of("nodus", "flip")

    assert second["phase"] == "Ready"
    assert second["imageUser"] == "x"
    assert verified(second)["observedGeneration"] == 2
    assert verified(second)["lastTransitionTime"] == first["lastTransitionTime"]
    assert verified(second)["message"] != first["message"]

    change_image("nodus", "flip", unsigned)
    reconciler.reconcile("nodus", "flip")
    third = status_of("nodus", "flip")
    assert (third["phase"], verified(third)["reason"]) == ("Failed", "SignatureMissing")
    assert verified(third)["lastTransitionTime"] != first["lastTransitionTime"]


def test_it_does_not_write_a_verdict_about_a_spec_that_changed_meanwhile(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtimes.controller import reconcile as module

    first = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/race:1", key=world.key)
    second = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/race:2")
    create_runtime("nodus", "race", first)
    judge = module.judge

    def judge_then_edit(*args: Any) -> Any:
        verdict = judge(*args)
        change_image("nodus", "race", second)  # someone edits while we look at the image
        return verdict

    monkeypatch.setattr(module, "judge", judge_then_edit)
    outcome = world.reconciler().reconcile("nodus", "race")

    assert outcome.stale
    assert not outcome.written
    status = status_of("nodus", "race")
    assert status["phase"] == "Pending"
    assert "conditions" not in status


def test_a_fresh_controller_finishes_what_a_killed_one_left(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtimes.controller.loop import Controller

    image = publish(world.layout, f"{LAYOUT_REGISTRY}/trainers/killed:1", key=world.key)
    create_runtime("nodus", "killed", image)

    class Killed(BaseException):
        pass

    def die(*args: Any) -> Any:
        raise Killed  # between reading the object and writing its status

    with monkeypatch.context() as patch:
        patch.setattr(Reconciler, "write_status", die)
        with pytest.raises(Killed):
            Controller(world.config).sync_once()
    assert status_of("nodus", "killed")["phase"] == "Pending"

    outcomes = Controller(world.config).sync_once()

    assert outcomes[("nodus", "killed")].written
    assert status_of("nodus", "killed")["phase"] == "Ready"


def test_it_refuses_a_registry_off_the_allow_list_without_contacting_it(world: World) -> None:
    def answer(handler: Any) -> None:
        handler.send_response(500)
        handler.end_headers()

    with stub_server(answer) as server:
        create_runtime("nodus", "elsewhere", f"{server.host}/trainers/x@sha256:{'1' * 64}")
        world.reconciler().reconcile("nodus", "elsewhere")
        assert server.paths == []

    status = status_of("nodus", "elsewhere")
    assert (status["phase"], verified(status)["reason"]) == ("Failed", "RegistryRefused")
    assert verified(status)["status"] == "False"


# -- a real registry ------------------------------------------------------------------------------


def test_it_verifies_signatures_pushed_to_a_registry(
    world: World,
    registry: RunningRegistry,
) -> None:
    world.allowed.add(registry.host)
    with world.client() as client:
        good = publish(client, registry.ref("pub/good:1"), key=world.key)
        unsigned = publish(client, registry.ref("pub/unsigned:1"))
        stranger = publish(client, registry.ref("pub/stranger:1"), key=generate_key_pair())
    for name, image in (("good", good), ("unsigned", unsigned), ("stranger", stranger)):
        create_runtime("nodus", name, image)
    create_runtime("demo", "unsigned", unsigned)
    reconciler = world.reconciler()

    for namespace, name in (("nodus", "good"), ("nodus", "unsigned"), ("nodus", "stranger")):
        reconciler.reconcile(namespace, name)
    reconciler.reconcile("demo", "unsigned")

    good_status = status_of("nodus", "good")
    assert (good_status["phase"], verified(good_status)["reason"]) == ("Ready", "SignatureVerified")
    unsigned_status = status_of("nodus", "unsigned")
    assert (unsigned_status["phase"], verified(unsigned_status)["reason"]) == (
        "Failed",
        "SignatureMissing",
    )
    assert "no cosign signature" in verified(unsigned_status)["message"]
    stranger_status = status_of("nodus", "stranger")
    assert (stranger_status["phase"], verified(stranger_status)["reason"]) == (
        "Failed",
        "SignatureInvalid",
    )
    assert "trusted key" in verified(stranger_status)["message"]
    demo = status_of("demo", "unsigned")
    assert (demo["phase"], verified(demo)["reason"]) == ("Ready", "DigestResolved")


def test_it_fails_an_image_the_registry_does_not_have(
    world: World,
    registry: RunningRegistry,
) -> None:
    world.allowed.add(registry.host)
    create_runtime("demo", "ghost", registry.ref(f"pub/ghost@sha256:{'2' * 64}"))

    world.reconciler().reconcile("demo", "ghost")

    status = status_of("demo", "ghost")
    assert (status["phase"], verified(status)["reason"]) == ("Failed", "ImageNotFound")


def test_it_needs_credentials_for_a_registry_that_demands_them(
    world: World,
    basic_auth_registry: RunningRegistry,
) -> None:
    host = basic_auth_registry.host
    world.allowed.add(host)
    assert basic_auth_registry.password is not None
    world.credentials[host] = Credential("alice", basic_auth_registry.password)
    with world.client() as client:
        image = publish(client, f"{host}/pub/private:1", key=world.key)
    create_runtime("nodus", "private", image)
    create_runtime("nodus", "anonymous", image)

    world.reconciler().reconcile("nodus", "private")
    del world.credentials[host]
    world.reconciler().reconcile("nodus", "anonymous")

    assert status_of("nodus", "private")["phase"] == "Ready"
    anonymous = status_of("nodus", "anonymous")
    assert (anonymous["phase"], verified(anonymous)["reason"]) == (
        "Failed",
        "RegistryUnauthorized",
    )


def test_it_keeps_a_runtime_pending_while_the_registry_is_down(
    world: World,
    stoppable_registry: RunningRegistry,
) -> None:
    world.allowed.add(stoppable_registry.host)
    with world.client() as client:
        image = publish(client, stoppable_registry.ref("pub/flaky:1"), key=world.key)
        ready = publish(client, stoppable_registry.ref("pub/steady:1"), key=world.key)
    create_runtime("nodus", "steady", ready)
    reconciler = world.reconciler()
    reconciler.reconcile("nodus", "steady")
    steady = store.get(runtime_type(), "nodus", "steady")
    stoppable_registry.stop()
    create_runtime("nodus", "flaky", image)

    outcome = reconciler.reconcile("nodus", "flaky")
    again = reconciler.reconcile("nodus", "steady", fresh=True)

    assert outcome.transient
    status = status_of("nodus", "flaky")
    condition = verified(status)
    assert (status["phase"], condition["status"]) == ("Pending", "Unknown")
    assert condition["reason"] == "RegistryUnavailable"
    assert "retry" in condition["message"]
    # An image already judged at this generation keeps its verdict while the registry is away.
    assert again.transient
    assert not again.written
    assert store.get(runtime_type(), "nodus", "steady") == steady

    restart(stoppable_registry)
    reconciler.reconcile("nodus", "flaky")
    status = status_of("nodus", "flaky")
    assert (status["phase"], verified(status)["reason"]) == ("Ready", "SignatureVerified")
    assert verified(status)["lastTransitionTime"] != condition["lastTransitionTime"]


def test_it_reads_registry_credentials_from_a_json_file(tmp_path: Path) -> None:
    from runtimes.controller.settings import load_credentials

    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"ghcr.io": {"username": "bot", "password": "token"}}))
    assert load_credentials(path) == {"ghcr.io": Credential("bot", "token")}
    path.write_text(json.dumps({"ghcr.io": {"password": "token"}}))
    with pytest.raises(ValueError, match="username"):
        load_credentials(path)


def test_it_keeps_digest_resolved_for_a_signed_user_runtime_and_names_the_key(
    world: World,
) -> None:
    image = publish(world.layout, f"{LAYOUT_REGISTRY}/examples/signed:1", key=world.key)
    create_runtime("demo", "signed", image)

    world.reconciler().reconcile("demo", "signed")

    condition = verified(status_of("demo", "signed"))
    assert (condition["status"], condition["reason"]) == ("True", "DigestResolved")
    assert f"sha256:{world.key.fingerprint}" in condition["message"]
