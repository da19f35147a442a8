"""An OCI image-layout directory as an ``ImageSource``: the embedded default's registry.

Layout: ``oci-layout``, ``index.json`` and ``blobs/sha256/<hex>``. Tags are index entries whose
``org.opencontainers.image.ref.name`` annotation holds the full ``registry/repository:tag``, so
images of many repositories (and their cosign ``sha256-<hex>.sig`` tags) share one directory.
Blobs are content-addressed and shared by all repositories.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runtimes.controller.oci.errors import ContentTooLarge, ImageNotFound, ManifestInvalid
from runtimes.controller.oci.images import (
    FetchedManifest,
    ResolvedImage,
    as_reference,
    resolve_image,
)
from runtimes.controller.oci.media import (
    DEFAULT_MAX_CONFIG_BYTES,
    DEFAULT_MAX_MANIFEST_BYTES,
    OCI_INDEX,
    Descriptor,
    check_digest,
    manifest_media_type,
    sha256_digest,
)
from runtimes.controller.oci.reference import ImageReference

REF_NAME = "org.opencontainers.image.ref.name"
LAYOUT_VERSION = {"imageLayoutVersion": "1.0.0"}


def ref_name(ref: ImageReference) -> str:
    """The annotation value a tag is stored under: ``registry/repository:tag``."""
    return f"{ref.name}:{ref.tag or 'latest'}"


class LayoutStore:
    """Reads and writes one OCI image-layout directory (created on first use)."""

    def __init__(
        self,
        root: Path | str,
        *,
        max_manifest_bytes: int = DEFAULT_MAX_MANIFEST_BYTES,
        max_config_bytes: int = DEFAULT_MAX_CONFIG_BYTES,
    ) -> None:
        self.root = Path(root)
        self.max_manifest_bytes = max_manifest_bytes
        self.max_config_bytes = max_config_bytes

    # -- ImageSource --------------------------------------------------------------------------

    def resolve(self, ref: ImageReference | str) -> ResolvedImage:
        return resolve_image(self, ref)

    def fetch_manifest(self, ref: ImageReference) -> FetchedManifest:
        ref = as_reference(ref)
        entries = self._read_index().get("manifests", [])
        if ref.digest:
            wanted = ref.digest
            declared = next(
                (e.get("mediaType") for e in entries if e.get("digest") == wanted), None
            )
        else:
            name = ref_name(ref)
            entry = next(
                (e for e in entries if (e.get("annotations") or {}).get(REF_NAME) == name), None
            )
            if entry is None:
                raise ImageNotFound(f"{name} is not tagged in the image layout {self.root}")
            wanted, declared = entry["digest"], entry.get("mediaType")
        content = self._read_blob(wanted, self.max_manifest_bytes, f"manifest of {ref}")
        return FetchedManifest(wanted, manifest_media_type(content, declared), content)

    def fetch_blob(self, ref: ImageReference, digest: str, max_bytes: int) -> bytes:
        return self._read_blob(digest, max_bytes, f"blob {digest} of {ref.name}")

    def push_blob(self, ref: ImageReference, content: bytes) -> str:
        digest = sha256_digest(content)
        path = self._blob_path(digest)
        if not path.exists():
            self._ensure_layout()
            _write_atomically(path, content)
        return digest

    def push_manifest(self, ref: ImageReference, content: bytes, media_type: str) -> str:
        digest = self.push_blob(ref, content)
        if ref.tag:
            descriptor = Descriptor(
                media_type=media_type,
                digest=digest,
                size=len(content),
                annotations={REF_NAME: ref_name(ref)},
            )
            with self._index_locked() as index:
                name = ref_name(ref)
                index["manifests"] = [
                    e
                    for e in index.get("manifests", [])
                    if (e.get("annotations") or {}).get(REF_NAME) != name
                ] + [descriptor.as_json()]
        return digest

    # -- files ----------------------------------------------------------------------------------

    def _blob_path(self, digest: str) -> Path:
        algorithm, _, hex_digest = digest.partition(":")
        if algorithm != "sha256" or len(hex_digest) != 64 or not hex_digest.isalnum():
            raise ManifestInvalid(f"unsupported digest {digest!r}")
        return self.root / "blobs" / "sha256" / hex_digest

    def _read_blob(self, digest: str, limit: int, what: str) -> bytes:
        path = self._blob_path(digest)
        try:
            with path.open("rb") as blob:
                size = os.fstat(blob.fileno()).st_size
                if size > limit:
                    raise ContentTooLarge(f"{what} is {size} bytes, over the {limit} byte limit")
                content = blob.read(limit + 1)
        except FileNotFoundError:
            raise ImageNotFound(
                f"{what}: {digest} is not in the image layout {self.root}"
            ) from None
        if len(content) > limit:  # grew between stat and read
            raise ContentTooLarge(f"{what} exceeds the {limit} byte limit")
        check_digest(content, digest, what)
        return content

    def _read_index(self) -> dict[str, Any]:
        try:
            index = json.loads((self.root / "index.json").read_bytes())
        except FileNotFoundError:
            return {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
        except ValueError as exc:
            raise ManifestInvalid(f"{self.root}/index.json is not JSON: {exc}") from None
        if not isinstance(index, dict) or not isinstance(index.get("manifests", []), list):
            raise ManifestInvalid(f"{self.root}/index.json is not an image index")
        return index

    def _ensure_layout(self) -> None:
        (self.root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        marker = self.root / "oci-layout"
        if not marker.exists():
            _write_atomically(marker, json.dumps(LAYOUT_VERSION).encode())
        if not (self.root / "index.json").exists():
            with self._index_locked():
                pass

    @contextlib.contextmanager
    def _index_locked(self) -> Iterator[dict[str, Any]]:
        """Read-modify-write of index.json under an exclusive lock (processes share layouts)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / ".index.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                index = self._read_index()
                yield index
                index.setdefault("schemaVersion", 2)
                index.setdefault("mediaType", OCI_INDEX)
                _write_atomically(self.root / "index.json", json.dumps(index, indent=1).encode())
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomically(path: Path, content: bytes) -> None:
    # Readers must never see half a blob or half an index: write aside, then rename.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
