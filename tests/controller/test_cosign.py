"""Signing as cosign does, then verifying: round trips and every way a signature can be wrong."""

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.errors import (
    ImageNotFound,
    InvalidImageReference,
    SignatureInvalid,
    SignatureMissing,
)
from runtimes.controller.oci.images import ImageSource
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.oci.media import OCI_CONFIG, OCI_MANIFEST
from runtimes.controller.oci.reference import ImageReference, parse_reference
from runtimes.controller.signing.cosign import (
    SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING,
    KeyPair,
    TrustedKey,
    generate_key_pair,
    load_private_key,
    sign,
    signature_tag,
    verify_image,
)
from tests.support.registry import RunningRegistry

NAME = "registry.test/team/sft"


@pytest.fixture
def store(tmp_path: Path) -> LayoutStore:
    return LayoutStore(tmp_path / "layout")


@pytest.fixture(scope="module")
def alice() -> KeyPair:
    return generate_key_pair()


@pytest.fixture(scope="module")
def mallory() -> KeyPair:
    return generate_key_pair()


def trusted(*pairs: KeyPair) -> list[TrustedKey]:
    return [TrustedKey.from_pem(pair.public_pem) for pair in pairs]


def pinned(store: ImageSource, name: str = NAME, user: str = "trainer") -> ImageReference:
    digest = build_image(store, f"{name}:v1", user=user)
    return parse_reference(f"{name}@{digest}")


def payload_for(digest: str, **critical: Any) -> dict[str, Any]:
    return {
        "critical": {
            "identity": {"docker-reference": NAME},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
            **critical,
        },
        "optional": None,
    }


def store_signature(
    source: ImageSource,
    ref: ImageReference,
    payload: bytes,
    key: KeyPair,
    *,
    media_type: str = SIMPLE_SIGNING,
    stored_payload: bytes | None = None,
) -> None:
    """Writes a .sig manifest by hand (not with ``sign``), signing ``payload`` with ``key``."""
    assert ref.digest
    private = load_private_key(key.private_pem)
    signature = base64.b64encode(private.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    blob = stored_payload if stored_payload is not None else payload
    source.push_blob(ref, blob)
    source.push_blob(ref, b"{}")
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": sha256(b"{}"), "size": 2},
        "layers": [
            {
                "mediaType": media_type,
                "digest": sha256(blob),
                "size": len(blob),
                "annotations": {SIGNATURE_ANNOTATION: signature},
            }
        ],
    }
    source.push_manifest(
        ref.with_tag(signature_tag(ref.digest)), json.dumps(manifest).encode(), OCI_MANIFEST
    )


def sha256(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def test_it_verifies_what_it_signed(store: LayoutStore, alice: KeyPair) -> None:
    ref = pinned(store)
    sign(store, ref, alice.private_pem)
    verified = verify_image(store, ref, trusted(alice))
    assert verified.key_fingerprint == alice.fingerprint
    assert verified.payload["critical"]["identity"]["docker-reference"] == NAME


def test_it_writes_the_signature_where_and_as_cosign_does(
    store: LayoutStore, alice: KeyPair
) -> None:
    ref = pinned(store)
    assert ref.digest
    sign(store, ref, alice.private_pem)
    fetched = store.fetch_manifest(
        ref.with_tag("sha256-" + ref.digest.removeprefix("sha256:") + ".sig")
    )
    manifest = json.loads(fetched.content)
    assert (fetched.media_type, manifest["config"]["mediaType"]) == (OCI_MANIFEST, OCI_CONFIG)
    [layer] = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    payload = store.fetch_blob(ref, layer["digest"], 1 << 20)
    assert json.loads(payload) == payload_for(ref.digest)
    # The annotation is a DER ECDSA-SHA256 signature of exactly the stored payload bytes.
    signature = base64.b64decode(layer["annotations"]["dev.cosignproject.cosign/signature"])
    TrustedKey.from_pem(alice.public_pem).public_key.verify(
        signature, payload, ec.ECDSA(hashes.SHA256())
    )


def test_it_appends_signatures_like_cosign(
    store: LayoutStore, alice: KeyPair, mallory: KeyPair
) -> None:
    ref = pinned(store)
    first = sign(store, ref, alice.private_pem)
    second = sign(store, ref, mallory.private_pem)
    assert first != second
    assert verify_image(store, ref, trusted(alice)).key_fingerprint == alice.fingerprint
    assert verify_image(store, ref, trusted(mallory)).key_fingerprint == mallory.fingerprint
    assert ref.digest
    manifest = json.loads(store.fetch_manifest(ref.with_tag(signature_tag(ref.digest))).content)
    assert len(manifest["layers"]) == 2


def test_it_signs_with_a_password_protected_key(store: LayoutStore) -> None:
    pair = generate_key_pair(b"correct horse")
    assert b"ENCRYPTED" in pair.private_pem
    ref = pinned(store)
    with pytest.raises((TypeError, ValueError)):
        sign(store, ref, pair.private_pem, password=b"wrong")
    sign(store, ref, pair.private_pem, password=b"correct horse")
    assert verify_image(store, ref, trusted(pair)).key_fingerprint == pair.fingerprint


def test_it_reports_an_unsigned_image_as_missing(store: LayoutStore, alice: KeyPair) -> None:
    with pytest.raises(SignatureMissing) as caught:
        verify_image(store, pinned(store), trusted(alice))
    assert caught.value.reason == "SignatureMissing"


def test_it_refuses_a_signature_by_an_untrusted_key(
    store: LayoutStore, alice: KeyPair, mallory: KeyPair
) -> None:
    ref = pinned(store)
    sign(store, ref, mallory.private_pem)
    with pytest.raises(SignatureInvalid, match="trusted key") as caught:
        verify_image(store, ref, trusted(alice))
    assert caught.value.reason == "SignatureInvalid"


def test_it_refuses_a_tampered_payload(store: LayoutStore, alice: KeyPair) -> None:
    ref = pinned(store)
    assert ref.digest
    payload = json.dumps(payload_for(ref.digest)).encode()
    tampered = payload.replace(b'"optional": null', b'"optional": {"by": "mallory"}')
    assert tampered != payload
    store_signature(store, ref, payload, alice, stored_payload=tampered)
    with pytest.raises(SignatureInvalid, match="trusted key"):
        verify_image(store, ref, trusted(alice))


def test_it_refuses_a_signature_for_another_digest(store: LayoutStore, alice: KeyPair) -> None:
    ref = pinned(store)
    other = pinned(store, f"{NAME}-other", user="someone")
    assert other.digest
    store_signature(store, ref, json.dumps(payload_for(other.digest)).encode(), alice)
    with pytest.raises(SignatureInvalid, match=f"is for {other.digest}"):
        verify_image(store, ref, trusted(alice))


def test_it_refuses_a_signature_layer_of_another_media_type(
    store: LayoutStore, alice: KeyPair
) -> None:
    ref = pinned(store)
    assert ref.digest
    payload = json.dumps(payload_for(ref.digest)).encode()
    store_signature(store, ref, payload, alice, media_type="application/json")
    with pytest.raises(SignatureInvalid, match="media type"):
        verify_image(store, ref, trusted(alice))


@pytest.mark.parametrize("kind", ["atomic container signature", "", None])
def test_it_refuses_a_payload_of_another_critical_type(
    store: LayoutStore, alice: KeyPair, kind: str | None
) -> None:
    ref = pinned(store)
    assert ref.digest
    payload = json.dumps(payload_for(ref.digest, type=kind)).encode()
    store_signature(store, ref, payload, alice)
    with pytest.raises(SignatureInvalid, match="type"):
        verify_image(store, ref, trusted(alice))


def test_it_needs_at_least_one_trusted_key(store: LayoutStore, alice: KeyPair) -> None:
    ref = pinned(store)
    sign(store, ref, alice.private_pem)
    with pytest.raises(SignatureInvalid, match="no trusted"):
        verify_image(store, ref, [])


def test_it_signs_only_pinned_images_that_exist(store: LayoutStore, alice: KeyPair) -> None:
    with pytest.raises(InvalidImageReference):
        sign(store, f"{NAME}:v1", alice.private_pem)
    with pytest.raises(ImageNotFound):
        sign(store, f"{NAME}@sha256:{'0' * 64}", alice.private_pem)


def test_it_refuses_keys_that_are_not_ecdsa_p256() -> None:
    p384 = ec.generate_private_key(ec.SECP384R1()).public_key()
    pem = p384.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with pytest.raises(ValueError, match="P-256"):
        TrustedKey.from_pem(pem)
    with pytest.raises(ValueError, match="PEM"):
        TrustedKey.from_pem("not a key")


def test_it_signs_and_verifies_in_a_real_registry(
    registry: RunningRegistry,
    alice: KeyPair,
    mallory: KeyPair,
) -> None:
    settings = RegistrySettings(allowed_registries=frozenset({registry.host}))
    with RegistryClient(settings) as client:
        digest = build_image(client, registry.ref("team/signed:v1"), user="trainer")
        ref = parse_reference(registry.ref(f"team/signed@{digest}"))
        with pytest.raises(SignatureMissing):
            verify_image(client, ref, trusted(alice))
        sign(client, ref, alice.private_pem)
        assert verify_image(client, ref, trusted(mallory, alice)).key_fingerprint == (
            alice.fingerprint
        )
        with pytest.raises(SignatureInvalid):
            verify_image(client, ref, trusted(mallory))
