"""The embedded default's images: built into the local image layout, signed, pinned in the seed.

The seed catalogs name ``registry.nodus.dev/...`` images with placeholder digests. Here each one
is built (small and deterministic, its config user taken from the runtime's
``nodus.dev/image-user`` annotation), managed ones are signed with the data dir's key pair
(generated on first use, trusted by default), and the manifest's image references are rewritten
to the built digests. Running it again builds the same bytes, finds the signatures in place and
so changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from runtimes.accounts.access import MANAGED_PROJECT
from runtimes.accounts.privatefiles import private_dir, tighten, write_private
from runtimes.apimachinery.meta import Obj
from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.errors import ImageNotFound, SignatureInvalid, SignatureMissing
from runtimes.controller.oci.images import FetchedManifest, ResolvedImage
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.oci.media import sha256_digest
from runtimes.controller.oci.reference import ImageReference, parse_reference
from runtimes.controller.signing.cosign import (
    KeyPair,
    TrustedKey,
    generate_key_pair,
    key_fingerprint,
    load_private_key,
    sign,
    verify_image,
)
from runtimes.registry.trainingruntime.images import LAYOUT_REGISTRY

SEED_REGISTRY = LAYOUT_REGISTRY
IMAGE_USER_ANNOTATION = "nodus.dev/image-user"
KEY_NAME = "cosign"


@dataclass(frozen=True)
class KeyFiles:
    private: Path  # PEM, PKCS#8, mode 0600
    public: Path  # PEM, SubjectPublicKeyInfo


def key_files(directory: Path, prefix: str = KEY_NAME) -> KeyFiles:
    return KeyFiles(directory / f"{prefix}.key", directory / f"{prefix}.pub")


def write_key_pair(pair: KeyPair, files: KeyFiles) -> None:
    """Writes both halves; the private key is created 0600 before any byte goes in."""
    files.private.parent.mkdir(parents=True, exist_ok=True)
    write_private(files.private, pair.private_pem)
    files.public.write_bytes(pair.public_pem)


def ensure_key_pair(directory: Path) -> KeyFiles:
    """The data dir's signing key pair, generated (unencrypted) when it does not exist yet."""
    files = key_files(directory)
    private_dir(directory)
    if not (files.private.exists() and files.public.exists()):
        write_key_pair(generate_key_pair(), files)
    tighten(files.private)
    return files


class SeedImages:
    """Builds, signs and pins the seed catalogs' images in one image layout."""

    def __init__(self, layout: LayoutStore, keys: KeyFiles) -> None:
        self.layout = layout
        self.private_key = load_private_key(keys.private.read_bytes())
        self.trusted = TrustedKey.from_pem(keys.public.read_bytes())
        if key_fingerprint(self.private_key.public_key()) != self.trusted.fingerprint:
            raise ValueError(f"{keys.private} and {keys.public} are not one key pair")
        self.built: dict[str, str] = {}  # reference as written → pinned reference

    def image_for(self, manifest: Obj) -> str:
        """``seeding.seed_manifests``' hook: pins spec.image (and sidecar images) in place."""
        spec = manifest.setdefault("spec", {})
        managed = manifest.get("metadata", {}).get("namespace") == MANAGED_PROJECT
        user = (manifest.get("metadata", {}).get("annotations") or {}).get(IMAGE_USER_ANNOTATION)
        for sidecar in (spec.get("defaults") or {}).get("sidecars") or []:
            if isinstance(sidecar, dict) and isinstance(sidecar.get("image"), str):
                sidecar["image"] = self.pin(sidecar["image"], user=None, signed=managed)
        return self.pin(spec["image"], user=None if user is None else str(user), signed=managed)

    def pin(self, image: str, *, user: str | None, signed: bool) -> str:
        """Builds ``image`` (its tag, any digest ignored); returns it pinned to the build."""
        ref = parse_reference(image)
        if ref.registry != SEED_REGISTRY:
            return image  # not ours to build: the controller resolves it from its registry
        if image in self.built:
            return self.built[image]
        tagged = replace(ref, digest=None, tag=ref.tag or "latest")
        digest = build_image(_DigestsOnly(), tagged, user=user)
        if self._tagged_digest(tagged) != digest:
            build_image(self.layout, tagged, user=user)
        pinned = tagged.with_digest(digest)
        if signed and not self._signed(pinned):
            sign(self.layout, pinned, self.private_key)
        self.built[image] = str(pinned)
        return str(pinned)

    def _tagged_digest(self, ref: ImageReference) -> str | None:
        try:
            return self.layout.fetch_manifest(ref).digest
        except ImageNotFound:
            return None

    def _signed(self, ref: ImageReference) -> bool:
        try:
            verify_image(self.layout, ref, [self.trusted])
        except (SignatureMissing, SignatureInvalid):
            return False
        return True


class _DigestsOnly:
    """A sink that only hashes what a build pushes: the digest, without touching the layout.

    Builds are deterministic, so comparing this digest with the tag's lets a second seed skip
    rewriting the layout's index at all.
    """

    max_manifest_bytes = max_config_bytes = 0

    def push_blob(self, ref: ImageReference, content: bytes) -> str:
        return sha256_digest(content)

    def push_manifest(self, ref: ImageReference, content: bytes, media_type: str) -> str:
        return sha256_digest(content)

    def fetch_manifest(self, ref: ImageReference) -> FetchedManifest:
        raise ImageNotFound("a digest-only sink holds nothing")

    def fetch_blob(self, ref: ImageReference, digest: str, max_bytes: int) -> bytes:
        raise ImageNotFound("a digest-only sink holds nothing")

    def resolve(self, ref: ImageReference | str) -> ResolvedImage:
        raise ImageNotFound("a digest-only sink holds nothing")


def seed_images_from_django() -> SeedImages:
    """The embedded default's layout and key pair, as the controller's settings name them."""
    from django.conf import settings

    from runtimes.controller.settings import default_key_dir, from_django

    config = from_django()
    keys = ensure_key_pair(default_key_dir(Path(settings.DATA_DIR)))
    return SeedImages(LayoutStore(config.layout_root), keys)
