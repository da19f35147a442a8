"""The publisher commands: generate_key, sign_image (registry and layout), runcontroller --once."""

from __future__ import annotations

import io
import stat
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runtimes.apimachinery.errors import ApiError
from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.errors import SignatureMissing
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.signing.cosign import TrustedKey, load_private_key, verify_image
from tests.support.controller import create_runtime, make_world, status_of, verified
from tests.support.registry import RunningRegistry


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_generate_key_writes_a_private_key_only_its_owner_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COSIGN_PASSWORD", raising=False)
    output = run("generate_key", "--dir", str(tmp_path))

    private, public = tmp_path / "cosign.key", tmp_path / "cosign.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    key = load_private_key(private.read_bytes())
    assert TrustedKey.from_pem(public.read_bytes()).fingerprint in output
    assert key.public_key().public_numbers() == (
        TrustedKey.from_pem(public.read_bytes()).public_key.public_numbers()
    )
    with pytest.raises(CommandError, match="already exist"):
        run("generate_key", "--dir", str(tmp_path))


def test_generate_key_encrypts_with_cosign_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COSIGN_PASSWORD", "s3cret")
    run("generate_key", "--dir", str(tmp_path), "--output-key-prefix", "release")

    pem = (tmp_path / "release.key").read_bytes()
    assert b"ENCRYPTED" in pem
    with pytest.raises(TypeError):
        load_private_key(pem)  # no password: refused
    load_private_key(pem, b"s3cret")


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("COSIGN_PASSWORD", raising=False)
    run("generate_key", "--dir", str(tmp_path))
    return tmp_path / "cosign.key"


def trusted(key: Path) -> TrustedKey:
    return TrustedKey.from_pem(key.with_suffix(".pub").read_bytes())


def test_sign_image_signs_an_image_in_the_registry(
    key: Path,
    settings: Any,
    registry: RunningRegistry,
) -> None:
    settings.NODUS_REGISTRY_ALLOW = registry.host
    with RegistryClient(RegistrySettings(frozenset({registry.host}))) as client:
        digest = build_image(client, registry.ref("publish/sft:1"), user="trainer")
        image = f"{registry.ref('publish/sft')}@{digest}"
        with pytest.raises(SignatureMissing):
            verify_image(client, image, [trusted(key)])

        output = run("sign_image", "--key", str(key), image)

        assert "registry" in output
        assert verify_image(client, image, [trusted(key)]).key_fingerprint in output


def test_sign_image_signs_into_the_layout_and_a_managed_runtime_turns_ready(
    key: Path, settings: Any, db: Any, tmp_path: Path
) -> None:
    from runtimes.controller.loop import Controller
    from runtimes.controller.settings import from_django

    layout = LayoutStore(tmp_path / "layout")
    settings.NODUS_IMAGE_LAYOUT = str(layout.root)
    settings.NODUS_TRUSTED_KEYS = str(key.with_suffix(".pub"))
    digest = build_image(layout, "registry.nodus.dev/trainers/published:1", user="trainer")
    image = f"registry.nodus.dev/trainers/published:1@{digest}"
    (tmp_path / "world").mkdir()
    make_world(tmp_path / "world")
    # Unsigned in the layout, the managed runtime is refused at admission: the controller
    # would find no signature.
    with pytest.raises(ApiError, match="without a cosign signature") as refused:
        create_runtime("nodus", "published", image)
    assert "cosign sign" in refused.value.fix

    output = run("sign_image", "--key", str(key), image)
    create_runtime("nodus", "published", image)
    Controller(from_django()).sync_once()

    assert "image layout" in output
    status = status_of("nodus", "published")
    assert (status["phase"], verified(status)["reason"]) == ("Ready", "SignatureVerified")


def test_sign_image_refuses_unpinned_images_and_registries_off_the_allow_list(
    key: Path, settings: Any
) -> None:
    settings.NODUS_REGISTRY_ALLOW = ""
    with pytest.raises(CommandError, match="InvalidImageReference"):
        run("sign_image", "--key", str(key), "registry.example.com/x:1")
    with pytest.raises(CommandError, match="RegistryRefused"):
        run("sign_image", "--key", str(key), f"registry.example.com/x@sha256:{'a' * 64}")
    with pytest.raises(CommandError, match="signing key"):
        run("sign_image", "--key", str(key.with_suffix(".pub")), f"x@sha256:{'a' * 64}")


def test_runcontroller_once_reports_every_runtime(
    key: Path, settings: Any, db: Any, tmp_path: Path
) -> None:
    settings.NODUS_IMAGE_LAYOUT = str(tmp_path / "layout")
    settings.NODUS_TRUSTED_KEYS = ""  # trust nothing: a managed runtime cannot be verified
    (tmp_path / "world").mkdir()
    make_world(tmp_path / "world")
    layout = LayoutStore(tmp_path / "layout")
    digest = build_image(layout, "registry.nodus.dev/trainers/lonely:1")
    run("sign_image", "--key", str(key), f"registry.nodus.dev/trainers/lonely:1@{digest}")
    create_runtime("nodus", "lonely", f"registry.nodus.dev/trainers/lonely:1@{digest}")
    create_runtime("demo", "lonely", f"registry.nodus.dev/trainers/lonely:1@{digest}")

    output = run("runcontroller", "--once")

    assert "nodus/lonely: False SignatureInvalid" in output
    assert "demo/lonely: True DigestResolved" in output
    assert "no trusted public keys" in verified(status_of("nodus", "lonely"))["message"]
