"""`manage.py seed` builds, signs and pins the catalogs' images; one controller pass verifies."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from runtimes.controller.loop import Controller
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.reconcile import runtime_type
from runtimes.controller.seed_images import IMAGE_USER_ANNOTATION, ensure_key_pair
from runtimes.controller.settings import from_django
from runtimes.controller.signing.cosign import TrustedKey, verify_image
from runtimes.registry import seeding
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from runtimes.storage.models import Event, Project


@pytest.fixture
def data_dir(db: Any, settings: Any, tmp_path: Path) -> Path:
    settings.DATA_DIR = tmp_path
    settings.NODUS_IMAGE_LAYOUT = str(tmp_path / "oci-layout")
    settings.NODUS_TRUSTED_KEYS = str(tmp_path / "keys" / "cosign.pub")
    settings.NODUS_REGISTRY_ALLOW = ""
    Project.objects.get_or_create(name="nodus")
    Project.objects.get_or_create(name="demo")
    return tmp_path


def catalog_users() -> dict[str, str]:
    """The config user each managed runtime's image should have, from the catalog file."""
    users = {}
    for doc in yaml.safe_load_all(seeding.MANAGED_CATALOG.read_text()):
        if doc:
            annotation = (doc["metadata"].get("annotations") or {}).get(IMAGE_USER_ANNOTATION)
            users[doc["metadata"]["name"]] = str(annotation) if annotation else "root"
    return users


def test_seed_then_one_pass_makes_the_catalog_ready_and_verified_by_the_data_dir_key(
    data_dir: Path,
) -> None:
    call_command("seed", verbosity=0)

    outcomes = Controller(from_django()).sync_once()

    rt = runtime_type()
    managed, _ = store.list_objects(rt, "nodus")
    users = catalog_users()
    assert len(managed) == len(users) > 0
    assert "root" in users.values()  # at least one image names no user
    for obj in managed:
        status = obj["status"]
        [verified] = status["conditions"]
        name = obj["metadata"]["name"]
        assert (status["phase"], verified["type"], verified["status"]) == (
            "Ready",
            "Verified",
            "True",
        ), name
        assert verified["reason"] == "SignatureVerified"
        assert status["imageUser"] == users[name]
        # The seed and the controller record themselves as the managers of what they wrote.
        entries = {
            (e["manager"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]
        }
        assert entries["nodus-seed", ""]["operation"] == "Update"
        assert "f:image" in entries["nodus-seed", ""]["fieldsV1"]["f:spec"]
        assert set(entries["nodus-controller", "status"]["fieldsV1"]) == {"f:status"}
        assert obj["spec"]["image"].endswith("@" + status["imageDigest"])
    example = store.get(rt, "demo", "tiny-sft")
    assert example["status"]["phase"] == "Ready"
    assert example["status"]["conditions"][0]["reason"] == "DigestResolved"
    assert all(outcome.written for outcome in outcomes.values())
    # The key pair that signed them: private to its owner, its public half trusted by default.
    keys = data_dir / "keys"
    assert stat.S_IMODE((keys / "cosign.key").stat().st_mode) == 0o600
    assert from_django().trusted_key_paths == (keys / "cosign.pub",)
    sidecar = store.get(rt, "nodus", "grpo-vllm")["spec"]["defaults"]["sidecars"][0]["image"]
    trusted = TrustedKey.from_pem((keys / "cosign.pub").read_bytes())
    assert verify_image(LayoutStore(data_dir / "oci-layout"), sidecar, [trusted])


def test_a_second_seed_writes_nothing(data_dir: Path) -> None:
    call_command("seed", verbosity=0)
    Controller(from_django()).sync_once()
    index = (data_dir / "oci-layout" / "index.json").read_bytes()
    key = (data_dir / "keys" / "cosign.key").read_bytes()
    events = Event.objects.count()

    call_command("seed", verbosity=0)
    outcomes = Controller(from_django()).sync_once()

    assert Event.objects.count() == events
    assert not any(outcome.written for outcome in outcomes.values())
    assert (data_dir / "oci-layout" / "index.json").read_bytes() == index  # no new signatures
    assert (data_dir / "keys" / "cosign.key").read_bytes() == key


def test_seed_can_leave_the_images_as_written(data_dir: Path) -> None:
    call_command("seed", "--no-images", verbosity=0)

    obj = store.get(runtime_type(), "nodus", "sft-qwen3")
    assert obj["spec"]["image"].endswith("0" * 63 + "1")
    [entry] = obj["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("nodus-seed", "Update")
    accelerator = store.list_objects(lookup("accelerators"), None)[0][0]
    assert [e["manager"] for e in accelerator["metadata"]["managedFields"]] == ["nodus-seed"]
    offerings = accelerator["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:offerings"]
    assert all(key.startswith('k:{"count":') for key in offerings if key != ".")
    assert not (data_dir / "oci-layout").exists()
    assert not (data_dir / "keys").exists()


def test_ensure_key_pair_makes_a_pair_once(tmp_path: Path) -> None:
    first = ensure_key_pair(tmp_path)
    public = first.public.read_bytes()

    again = ensure_key_pair(tmp_path)

    assert again == first
    assert again.public.read_bytes() == public
