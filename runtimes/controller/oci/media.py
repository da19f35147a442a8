"""Manifest media types and the parts of manifests the controller reads.

Covers OCI image manifests and indexes and Docker's v2 schema2 manifests and manifest lists,
which registries still serve for most public images. Schema1 is refused: it carries no config
blob, so it cannot tell us the user an image runs as.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from runtimes.controller.oci.errors import DigestMismatch, ManifestInvalid

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"

IMAGE_MANIFESTS = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
INDEXES = frozenset({OCI_INDEX, DOCKER_MANIFEST_LIST})
MANIFEST_MEDIA_TYPES = IMAGE_MANIFESTS | INDEXES
# Sent as Accept on every manifest request; without it registries may down-convert to schema1.
ACCEPT_MANIFESTS = ", ".join(sorted(MANIFEST_MEDIA_TYPES))

MIB = 1 << 20
DEFAULT_MAX_MANIFEST_BYTES = 4 * MIB
DEFAULT_MAX_CONFIG_BYTES = 4 * MIB

PLATFORM_OS = "linux"
PLATFORM_ARCHITECTURE = "amd64"


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    annotations: dict[str, str]
    platform: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, raw: Any, where: str) -> Descriptor:
        if not isinstance(raw, dict):
            raise ManifestInvalid(f"{where} is not an object")
        digest, size, media_type = raw.get("digest"), raw.get("size"), raw.get("mediaType", "")
        if not isinstance(digest, str) or not digest.startswith("sha256:") or len(digest) != 71:
            raise ManifestInvalid(f"{where}.digest {digest!r} is not a sha256 digest")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ManifestInvalid(f"{where}.size {size!r} is not a size")
        annotations = raw.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise ManifestInvalid(f"{where}.annotations is not an object")
        platform = raw.get("platform")
        return cls(
            media_type=str(media_type),
            digest=digest,
            size=size,
            annotations={str(k): str(v) for k, v in annotations.items()},
            platform=platform if isinstance(platform, dict) else None,
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": self.size,
        }
        if self.platform:
            out["platform"] = self.platform
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass(frozen=True)
class ImageManifest:
    media_type: str
    config: Descriptor
    layers: tuple[Descriptor, ...]


@dataclass(frozen=True)
class ImageIndex:
    media_type: str
    manifests: tuple[Descriptor, ...]


def sha256_digest(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def check_digest(content: bytes, expected: str, what: str) -> None:
    actual = sha256_digest(content)
    if actual != expected:
        raise DigestMismatch(f"{what}: expected {expected}, received content hashes to {actual}")


def manifest_media_type(content: bytes, declared: str | None) -> str:
    """The media type a manifest is: the Content-Type, else its own ``mediaType`` field."""
    declared = (declared or "").split(";", 1)[0].strip()
    if declared in MANIFEST_MEDIA_TYPES:
        return declared
    document = _load(content, "manifest")
    inner = document.get("mediaType")
    if isinstance(inner, str) and inner in MANIFEST_MEDIA_TYPES:
        return inner
    # OCI allows omitting mediaType; the shape tells an index from a manifest.
    if "manifests" in document:
        return OCI_INDEX
    if "config" in document and "layers" in document:
        return OCI_MANIFEST
    raise ManifestInvalid(f"unsupported manifest media type {declared or inner!r}")


def parse_manifest(content: bytes, media_type: str) -> ImageManifest | ImageIndex:
    document = _load(content, "manifest")
    if document.get("schemaVersion") != 2:
        raise ManifestInvalid(f"manifest schemaVersion {document.get('schemaVersion')!r} is not 2")
    if media_type in INDEXES:
        entries = document.get("manifests")
        if not isinstance(entries, list):
            raise ManifestInvalid("index has no manifests list")
        return ImageIndex(
            media_type=media_type,
            manifests=tuple(
                Descriptor.from_json(entry, f"manifests[{i}]") for i, entry in enumerate(entries)
            ),
        )
    if media_type in IMAGE_MANIFESTS:
        layers = document.get("layers")
        if not isinstance(layers, list):
            raise ManifestInvalid("manifest has no layers list")
        return ImageManifest(
            media_type=media_type,
            config=Descriptor.from_json(document.get("config"), "config"),
            layers=tuple(
                Descriptor.from_json(layer, f"layers[{i}]") for i, layer in enumerate(layers)
            ),
        )
    raise ManifestInvalid(f"unsupported manifest media type {media_type!r}")


def select_platform(index: ImageIndex) -> Descriptor:
    """The linux/amd64 entry of an index (no variant preference: amd64 has none in practice)."""
    for entry in index.manifests:
        platform = entry.platform or {}
        if (
            platform.get("os") == PLATFORM_OS
            and platform.get("architecture") == PLATFORM_ARCHITECTURE
        ):
            return entry
    offered = sorted(
        f"{(e.platform or {}).get('os')}/{(e.platform or {}).get('architecture')}"
        for e in index.manifests
    )
    raise ManifestInvalid(
        f"index offers no linux/amd64 image (offers {', '.join(offered) or 'none'})"
    )


def config_user(content: bytes) -> str:
    """``config.User`` of an image config; ``root`` when the image names none."""
    document = _load(content, "image config")
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise ManifestInvalid("image config field 'config' is not an object")
    user = config.get("User")
    if user is None:
        return "root"
    if not isinstance(user, str):
        raise ManifestInvalid("image config field 'config.User' is not a string")
    return user or "root"


def _load(content: bytes, what: str) -> dict[str, Any]:
    try:
        document = json.loads(content)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ManifestInvalid(f"{what} is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ManifestInvalid(f"{what} is not a JSON object")
    return document
