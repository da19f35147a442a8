"""The ``ImageSource`` protocol shared by registries and image layouts, and image resolution.

Resolution is written once against the protocol: fetch the manifest (by digest when pinned),
descend an index to linux/amd64, fetch the config and read ``config.User``. Sources only move
bytes and check digests, so a layout directory and a registry behave identically here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from runtimes.controller.oci.errors import ContentTooLarge, ManifestInvalid
from runtimes.controller.oci.media import (
    ImageIndex,
    ImageManifest,
    config_user,
    parse_manifest,
    select_platform,
)
from runtimes.controller.oci.reference import ImageReference, parse_reference


@dataclass(frozen=True)
class FetchedManifest:
    digest: str  # sha256 of exactly these bytes
    media_type: str
    content: bytes


@dataclass(frozen=True)
class ResolvedImage:
    reference: ImageReference
    digest: str  # of the manifest the reference names (an index when the image is multi-arch)
    media_type: str
    manifest: bytes
    user: str  # config.User, "root" when empty
    config_digest: str
    platform_digest: str  # the linux/amd64 image manifest; equals digest for single images


@runtime_checkable
class ImageSource(Protocol):
    """Where images live: a registry (``RegistryClient``) or a layout (``LayoutStore``)."""

    max_manifest_bytes: int
    max_config_bytes: int

    def fetch_manifest(self, ref: ImageReference) -> FetchedManifest:
        """The manifest at ``ref.digest`` (checked against it) or else at ``ref.tag``."""
        ...

    def fetch_blob(self, ref: ImageReference, digest: str, max_bytes: int) -> bytes:
        """A blob of ``ref``'s repository, checked against ``digest``, refused past max_bytes."""
        ...

    def push_blob(self, ref: ImageReference, content: bytes) -> str:
        """Stores a blob in ``ref``'s repository; returns its digest."""
        ...

    def push_manifest(self, ref: ImageReference, content: bytes, media_type: str) -> str:
        """Stores a manifest, tagged ``ref.tag`` when set; returns its digest."""
        ...

    def resolve(self, ref: ImageReference | str) -> ResolvedImage: ...


def as_reference(ref: ImageReference | str) -> ImageReference:
    return ref if isinstance(ref, ImageReference) else parse_reference(ref)


def resolve_image(source: ImageSource, ref: ImageReference | str) -> ResolvedImage:
    """Digest, manifest and config user of ``ref`` as ``source`` holds it."""
    ref = as_reference(ref)
    top = source.fetch_manifest(ref)
    parsed = parse_manifest(top.content, top.media_type)
    platform_digest = top.digest
    if isinstance(parsed, ImageIndex):
        entry = select_platform(parsed)
        child = source.fetch_manifest(ref.with_digest(entry.digest))
        parsed = parse_manifest(child.content, child.media_type)
        platform_digest = child.digest
        if not isinstance(parsed, ImageManifest):
            raise ManifestInvalid(f"linux/amd64 entry {entry.digest} of the index is not an image")
    config = parsed.config
    # The descriptor states the size; refuse before asking for the bytes at all.
    if config.size > source.max_config_bytes:
        raise ContentTooLarge(
            f"image config {config.digest} is {config.size} bytes, "
            f"over the {source.max_config_bytes} byte limit"
        )
    content = source.fetch_blob(ref, config.digest, source.max_config_bytes)
    return ResolvedImage(
        reference=ref,
        digest=top.digest,
        media_type=top.media_type,
        manifest=top.content,
        user=config_user(content),
        config_digest=config.digest,
        platform_digest=platform_digest,
    )
