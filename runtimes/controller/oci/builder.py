"""Builds minimal, valid linux/amd64 images into any ``ImageSource``.

Used for the embedded default's images, for signing demos and in tests. Output is
deterministic (fixed tar and gzip timestamps), so the same inputs give the same digest.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from dataclasses import replace
from typing import Any

from runtimes.controller.oci.images import ImageSource, as_reference
from runtimes.controller.oci.media import (
    DOCKER_CONFIG,
    DOCKER_LAYER_GZIP,
    DOCKER_MANIFEST,
    DOCKER_MANIFEST_LIST,
    OCI_CONFIG,
    OCI_INDEX,
    OCI_LAYER_GZIP,
    OCI_MANIFEST,
    Descriptor,
    sha256_digest,
)
from runtimes.controller.oci.reference import ImageReference

# The decoy platform in multi-arch images runs as a user the amd64 image never has, so a
# resolver that picks the wrong entry is caught.
DECOY_ARCHITECTURE = "arm64"
DECOY_USER = "arm64-decoy"


def build_image(
    source: ImageSource,
    ref: ImageReference | str,
    *,
    user: str | None = None,
    docker: bool = False,
    multi_arch: bool = False,
    files: dict[str, bytes] | None = None,
) -> str:
    """Pushes an image to ``ref`` (tagged when it has a tag) and returns its manifest digest.

    ``user`` becomes ``config.User`` (absent when None); ``docker`` uses Docker v2 schema2 media
    types instead of OCI; ``multi_arch`` wraps it in an index (or manifest list) next to an
    arm64 decoy.
    """
    ref = as_reference(ref)
    untagged = replace(ref, tag=None, digest=None)
    contents = files if files is not None else {"etc/nodus-image": f"{ref.name}\n".encode()}
    amd64 = _push_image(source, untagged, user, "amd64", docker, contents)
    if not multi_arch:
        return _push_manifest(source, ref, amd64)
    decoy = _push_image(source, untagged, DECOY_USER, DECOY_ARCHITECTURE, docker, contents)
    for manifest in (amd64, decoy):  # by digest only: the index is what the tag names
        _push_manifest(source, untagged, manifest)
    index = {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST_LIST if docker else OCI_INDEX,
        "manifests": [
            _platform_descriptor(decoy, DECOY_ARCHITECTURE),
            _platform_descriptor(amd64, "amd64"),
        ],
    }
    return _push_manifest(source, ref, index)


def layer_tar_gz(files: dict[str, bytes]) -> tuple[bytes, str]:
    """A gzipped tar of ``files`` and the diff_id (digest of the uncompressed tar)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    tar_bytes = raw.getvalue()
    return gzip.compress(tar_bytes, mtime=0), sha256_digest(tar_bytes)


def _push_image(
    source: ImageSource,
    ref: ImageReference,
    user: str | None,
    architecture: str,
    docker: bool,
    files: dict[str, bytes],
) -> dict[str, Any]:
    layer, diff_id = layer_tar_gz(files)
    config: dict[str, Any] = {
        "architecture": architecture,
        "os": "linux",
        "config": {"User": user} if user is not None else {},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "nodus-console image builder"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    source.push_blob(ref, layer)
    source.push_blob(ref, config_bytes)
    return {
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST if docker else OCI_MANIFEST,
        "config": Descriptor(
            DOCKER_CONFIG if docker else OCI_CONFIG,
            sha256_digest(config_bytes),
            len(config_bytes),
            {},
        ).as_json(),
        "layers": [
            Descriptor(
                DOCKER_LAYER_GZIP if docker else OCI_LAYER_GZIP,
                sha256_digest(layer),
                len(layer),
                {},
            ).as_json()
        ],
    }


def _push_manifest(source: ImageSource, ref: ImageReference, manifest: dict[str, Any]) -> str:
    content = json.dumps(manifest, indent=2).encode()
    return source.push_manifest(replace(ref, digest=None), content, manifest["mediaType"])


def _platform_descriptor(manifest: dict[str, Any], architecture: str) -> dict[str, Any]:
    content = json.dumps(manifest, indent=2).encode()
    return {
        "mediaType": manifest["mediaType"],
        "digest": sha256_digest(content),
        "size": len(content),
        "platform": {"architecture": architecture, "os": "linux"},
    }
