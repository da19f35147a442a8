"""What the reconcile loop asks of an image: digest, config user and signature verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runtimes.controller.oci.errors import SignatureInvalid, SignatureMissing
from runtimes.controller.oci.images import ImageSource
from runtimes.controller.oci.reference import ImageReference, parse_reference
from runtimes.controller.signing.cosign import TrustedKey, load_trusted_keys, verify_image


@dataclass(frozen=True)
class Inspection:
    digest: str  # the pinned manifest digest, checked against the bytes received
    user: str  # config.User of the linux/amd64 image; "root" when it names none
    verified: bool  # a trusted key signed exactly this digest
    key_fingerprint: str | None  # hex sha256 of that key's DER SubjectPublicKeyInfo


def inspect(
    source: ImageSource,
    ref: ImageReference | str,
    trusted_keys: Sequence[TrustedKey | bytes | str],
    require_signature: bool,
) -> Inspection:
    """Resolves a digest-pinned ``ref`` and checks its cosign signature.

    Raises the typed errors of ``runtimes.controller.oci.errors``. When ``require_signature`` is
    false, a missing or invalid signature yields ``verified=False`` instead of an error;
    ``Transient`` failures always propagate so the caller retries.
    """
    ref = parse_reference(str(ref), require_digest=True)
    keys = load_trusted_keys(trusted_keys)
    resolved = source.resolve(ref)
    if not keys and not require_signature:
        return Inspection(resolved.digest, resolved.user, verified=False, key_fingerprint=None)
    try:
        signature = verify_image(source, ref, keys)
    except (SignatureMissing, SignatureInvalid):
        if require_signature:
            raise
        return Inspection(resolved.digest, resolved.user, verified=False, key_fingerprint=None)
    return Inspection(
        resolved.digest, resolved.user, verified=True, key_fingerprint=signature.key_fingerprint
    )
