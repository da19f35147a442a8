"""Real cosign signatures (tests/controller/cosign_vectors/) are accepted or refused as they say."""

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from runtimes.controller.oci.errors import SignatureInvalid
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.oci.media import OCI_CONFIG, OCI_MANIFEST, manifest_media_type
from runtimes.controller.oci.reference import parse_reference
from runtimes.controller.signing.cosign import (
    SIGNATURE_ANNOTATION,
    TrustedKey,
    key_fingerprint,
    signature_tag,
    verify_image,
    verify_payload,
)

VECTORS = Path(__file__).resolve().parent / "cosign_vectors"


CASES: list[dict[str, Any]] = json.loads((VECTORS / "vectors.json").read_text())["cases"]


def case_inputs(case: dict[str, Any]) -> tuple[bytes, bytes, TrustedKey]:
    manifest = (VECTORS / case["manifest"]).read_bytes()
    payload = base64.b64decode(case["payload"])
    return manifest, payload, TrustedKey.from_pem((VECTORS / case["publicKey"]).read_bytes())


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_it_judges_each_vector_as_it_says(case: dict[str, Any]) -> None:
    manifest, payload, key = case_inputs(case)
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    assert case["expect"] in ("valid", "invalid")
    if case["expect"] == "valid":
        verifier, document = verify_payload(
            payload, case["mediaType"], case["signature"], digest, [key]
        )
        assert verifier.fingerprint == key.fingerprint
        assert document["critical"]["image"]["docker-manifest-digest"] == digest
    else:
        with pytest.raises(SignatureInvalid):
            verify_payload(payload, case["mediaType"], case["signature"], digest, [key])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_it_judges_each_vector_stored_as_cosign_stores_it(
    case: dict[str, Any], tmp_path: Path
) -> None:
    """The whole path: manifest and a .sig manifest in a layout, found and checked by tag."""
    manifest, payload, key = case_inputs(case)
    store = LayoutStore(tmp_path)
    ref = parse_reference("registry.test/cosign-signed/sample")
    digest = store.push_manifest(ref, manifest, manifest_media_type(manifest, None))
    store.push_blob(ref, payload)
    config = b"{}"
    store.push_blob(ref, config)
    signature_manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": OCI_CONFIG,
            "digest": "sha256:" + hashlib.sha256(config).hexdigest(),
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": case["mediaType"],
                "digest": "sha256:" + hashlib.sha256(payload).hexdigest(),
                "size": len(payload),
                "annotations": {SIGNATURE_ANNOTATION: case["signature"]},
            }
        ],
    }
    store.push_manifest(
        ref.with_tag(signature_tag(digest)), json.dumps(signature_manifest).encode(), OCI_MANIFEST
    )
    pinned = ref.with_digest(digest)
    if case["expect"] == "valid":
        assert verify_image(store, pinned, [key]).key_fingerprint == key.fingerprint
    else:
        with pytest.raises(SignatureInvalid):
            verify_image(store, pinned, [key])


def test_it_fingerprints_keys_as_sha256_of_their_der_public_key_info() -> None:
    pem = (VECTORS / "cosign.pub").read_text()
    der = base64.b64decode("".join(line for line in pem.splitlines() if "-----" not in line))
    assert key_fingerprint(pem) == hashlib.sha256(der).hexdigest()
    assert key_fingerprint(pem) != key_fingerprint((VECTORS / "cosign2.pub").read_text())


def test_it_accepts_a_vector_when_any_trusted_key_verifies_it() -> None:
    case = next(c for c in CASES if c["name"] == "cosign-created")
    manifest, payload, key = case_inputs(case)
    other = TrustedKey.from_pem((VECTORS / "cosign2.pub").read_bytes())
    digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    verifier, _ = verify_payload(
        payload, case["mediaType"], case["signature"], digest, [other, key]
    )
    assert verifier == key
