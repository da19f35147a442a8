"""cosign key-based signatures: verify them, and write them as cosign does.

cosign stores signatures for ``repo@sha256:<hex>`` as an OCI manifest tagged ``sha256-<hex>.sig``
in the same repository. Each layer is a "simple signing" JSON payload naming the signed manifest
digest, with the base64 DER ECDSA-SHA256 signature in a layer annotation. We accept an image when
one layer verifies against a trusted public key and its payload names exactly this digest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtimes.controller.oci.errors import (
    ContentTooLarge,
    DigestMismatch,
    ImageNotFound,
    InvalidImageReference,
    ManifestInvalid,
    SignatureInvalid,
    SignatureMissing,
)
from runtimes.controller.oci.images import ImageSource, as_reference
from runtimes.controller.oci.media import (
    OCI_CONFIG,
    OCI_MANIFEST,
    Descriptor,
    ImageManifest,
    parse_manifest,
    sha256_digest,
)
from runtimes.controller.oci.reference import ImageReference

SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
SIGNATURE_TYPE = "cosign container image signature"
MAX_PAYLOAD_BYTES = 1 << 20
_ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class TrustedKey:
    public_key: ec.EllipticCurvePublicKey
    fingerprint: str  # hex sha256 of the DER SubjectPublicKeyInfo

    @classmethod
    def from_pem(cls, pem: bytes | str) -> TrustedKey:
        data = pem.encode() if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_public_key(data)
        except ValueError as exc:
            raise ValueError(f"not a PEM public key: {exc}") from None
        if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
            raise ValueError("cosign keys must be ECDSA P-256 public keys")
        return cls(public_key=key, fingerprint=key_fingerprint(key))


@dataclass(frozen=True)
class VerifiedSignature:
    key_fingerprint: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class KeyPair:
    private_pem: bytes  # PKCS#8, encrypted when a password was given
    public_pem: bytes  # SubjectPublicKeyInfo
    fingerprint: str


def key_fingerprint(key: ec.EllipticCurvePublicKey | bytes | str) -> str:
    if not isinstance(key, ec.EllipticCurvePublicKey):
        key = TrustedKey.from_pem(key).public_key
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


def load_trusted_keys(keys: Iterable[TrustedKey | bytes | str]) -> list[TrustedKey]:
    return [key if isinstance(key, TrustedKey) else TrustedKey.from_pem(key) for key in keys]


def signature_tag(digest: str) -> str:
    """cosign's tag for the signatures of ``digest``: ``sha256-<hex>.sig``."""
    algorithm, _, hex_digest = digest.partition(":")
    return f"{algorithm}-{hex_digest}.sig"


def verify_payload(
    payload: bytes,
    media_type: str,
    signature: str,
    digest: str,
    trusted_keys: Sequence[TrustedKey],
) -> tuple[TrustedKey, dict[str, Any]]:
    """Checks one signature layer; returns the key that verified it and the parsed payload."""
    if media_type != SIMPLE_SIGNING:
        raise SignatureInvalid(f"layer media type {media_type!r} is not {SIMPLE_SIGNING}")
    try:
        der_signature = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureInvalid("signature annotation is not base64") from None
    key = _verifying_key(payload, der_signature, trusted_keys)
    # Parsed only once a trusted key vouches for the bytes.
    try:
        document = json.loads(payload)
    except ValueError:
        raise SignatureInvalid("signed payload is not JSON") from None
    critical = document.get("critical") if isinstance(document, dict) else None
    if not isinstance(critical, dict):
        raise SignatureInvalid("signed payload has no critical section")
    if critical.get("type") != SIGNATURE_TYPE:
        raise SignatureInvalid(
            f"signed payload type {critical.get('type')!r} is not {SIGNATURE_TYPE!r}"
        )
    image = critical.get("image")
    signed_digest = image.get("docker-manifest-digest") if isinstance(image, dict) else None
    if signed_digest != digest:
        raise SignatureInvalid(f"signature is for {signed_digest}, not {digest}")
    return key, document


def verify_image(
    source: ImageSource, ref: ImageReference | str, trusted_keys: Sequence[TrustedKey]
) -> VerifiedSignature:
    """The first signature of pinned ``ref`` that a trusted key verifies, or a typed refusal."""
    ref = _pinned(ref)
    assert ref.digest is not None
    if not trusted_keys:
        raise SignatureInvalid("no trusted public keys are configured")
    signatures = _signature_manifest(source, ref)
    if signatures is None or not signatures.layers:
        raise SignatureMissing(f"no cosign signature for {ref.name}@{ref.digest}")
    problems: list[str] = []
    for position, layer in enumerate(signatures.layers):
        try:
            annotation = layer.annotations.get(SIGNATURE_ANNOTATION)
            if annotation is None:
                raise SignatureInvalid(f"no {SIGNATURE_ANNOTATION} annotation")
            if layer.media_type != SIMPLE_SIGNING:
                raise SignatureInvalid(f"media type {layer.media_type!r} is not {SIMPLE_SIGNING}")
            payload = source.fetch_blob(ref, layer.digest, MAX_PAYLOAD_BYTES)
            key, document = verify_payload(
                payload, layer.media_type, annotation, ref.digest, trusted_keys
            )
        except (SignatureInvalid, ImageNotFound, ContentTooLarge, DigestMismatch) as exc:
            problems.append(f"signature {position}: {exc}")
            continue
        return VerifiedSignature(key_fingerprint=key.fingerprint, payload=document)
    reasons = "; ".join(problems)
    raise SignatureInvalid(f"no signature of {ref.name}@{ref.digest} verifies: {reasons}")


def generate_key_pair(password: bytes | None = None) -> KeyPair:
    private_key = ec.generate_private_key(ec.SECP256R1())
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    public_key = private_key.public_key()
    return KeyPair(
        private_pem=private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        ),
        public_pem=public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        fingerprint=key_fingerprint(public_key),
    )


def load_private_key(pem: bytes | str, password: bytes | None = None) -> ec.EllipticCurvePrivateKey:
    data = pem.encode() if isinstance(pem, str) else pem
    key = serialization.load_pem_private_key(data, password=password)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError("cosign signing keys must be ECDSA P-256 private keys")
    return key


def simple_signing_payload(ref: ImageReference, optional: dict[str, Any] | None = None) -> bytes:
    """The payload cosign signs: identity, manifest digest and type (compact JSON, as cosign)."""
    document = {
        "critical": {
            "identity": {"docker-reference": ref.name},
            "image": {"docker-manifest-digest": ref.digest},
            "type": SIGNATURE_TYPE,
        },
        "optional": optional,
    }
    return json.dumps(document, separators=(",", ":")).encode()


def sign(
    source: ImageSource,
    ref: ImageReference | str,
    private_key: ec.EllipticCurvePrivateKey | bytes | str,
    *,
    password: bytes | None = None,
    optional: dict[str, Any] | None = None,
) -> str:
    """Signs pinned ``ref`` and stores the signature at its ``.sig`` tag; returns that digest."""
    ref = _pinned(ref)
    assert ref.digest is not None
    if not isinstance(private_key, ec.EllipticCurvePrivateKey):
        private_key = load_private_key(private_key, password)
    source.fetch_manifest(ref)  # cosign refuses to sign what the registry does not hold
    payload = simple_signing_payload(ref, optional)
    der = private_key.sign(payload, ec.ECDSA(hashes.SHA256()))
    annotation = base64.b64encode(der).decode("ascii")
    layer = Descriptor(
        SIMPLE_SIGNING, sha256_digest(payload), len(payload), {SIGNATURE_ANNOTATION: annotation}
    )
    existing = _signature_manifest(source, ref)
    # Like cosign, a new signature is appended to the ones already there.
    layers = [*existing.layers] if existing else []
    layers.append(layer)
    source.push_blob(ref, payload)
    config = {
        "architecture": "",
        "config": {},
        "created": _ZERO_TIME,
        "history": [{"created": _ZERO_TIME}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": [entry.digest for entry in layers]},
    }
    config_bytes = json.dumps(config, separators=(",", ":")).encode()
    source.push_blob(ref, config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": Descriptor(
            OCI_CONFIG, sha256_digest(config_bytes), len(config_bytes), {}
        ).as_json(),
        "layers": [entry.as_json() for entry in layers],
    }
    content = json.dumps(manifest, separators=(",", ":")).encode()
    return source.push_manifest(ref.with_tag(signature_tag(ref.digest)), content, OCI_MANIFEST)


def _pinned(ref: ImageReference | str) -> ImageReference:
    ref = as_reference(ref)
    if not ref.digest:
        raise InvalidImageReference(f"{ref} is not pinned to a digest")
    return ref


def _signature_manifest(source: ImageSource, ref: ImageReference) -> ImageManifest | None:
    assert ref.digest is not None
    try:
        fetched = source.fetch_manifest(ref.with_tag(signature_tag(ref.digest)))
    except ImageNotFound:
        return None
    except (ContentTooLarge, DigestMismatch) as exc:
        raise SignatureInvalid(f"signature manifest of {ref} is unusable: {exc}") from None
    try:
        parsed = parse_manifest(fetched.content, fetched.media_type)
    except ManifestInvalid as exc:
        raise SignatureInvalid(f"signature manifest of {ref} is malformed: {exc}") from None
    if not isinstance(parsed, ImageManifest):
        raise SignatureInvalid(f"signature manifest of {ref} is an index, not a manifest")
    return parsed


def _verifying_key(
    payload: bytes, der_signature: bytes, trusted_keys: Sequence[TrustedKey]
) -> TrustedKey:
    for key in trusted_keys:
        try:
            key.public_key.verify(der_signature, payload, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        return key
    raise SignatureInvalid("the signature does not verify with any trusted key")
