"""The OCI image-layout store: on-disk format, tags by ref name, resolution, signing."""

import hashlib
import json
from pathlib import Path

import pytest

from runtimes.controller.inspection import inspect
from runtimes.controller.oci.builder import DECOY_USER, build_image
from runtimes.controller.oci.errors import (
    ContentTooLarge,
    DigestMismatch,
    ImageNotFound,
    SignatureMissing,
)
from runtimes.controller.oci.images import ImageSource
from runtimes.controller.oci.layout import REF_NAME, LayoutStore
from runtimes.controller.oci.media import DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from runtimes.controller.signing.cosign import generate_key_pair, sign

NAME = "registry.nodus.local/trainers/sft"


@pytest.fixture
def store(tmp_path: Path) -> LayoutStore:
    return LayoutStore(tmp_path / "layout")


def blob_path(store: LayoutStore, digest: str) -> Path:
    return store.root / "blobs" / "sha256" / digest.removeprefix("sha256:")


def test_it_is_an_image_source(store: LayoutStore) -> None:
    assert isinstance(store, ImageSource)


def test_it_writes_a_valid_image_layout(store: LayoutStore) -> None:
    digest = build_image(store, f"{NAME}:v1", user="trainer")

    assert json.loads((store.root / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads((store.root / "index.json").read_text())
    assert (index["schemaVersion"], index["mediaType"]) == (2, OCI_INDEX)
    [entry] = index["manifests"]
    assert entry["annotations"] == {REF_NAME: f"{NAME}:v1"}
    assert (entry["digest"], entry["mediaType"]) == (digest, OCI_MANIFEST)
    # Every blob is stored under the sha256 of its bytes, and the manifest's are all present.
    for blob in (store.root / "blobs" / "sha256").iterdir():
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name
    manifest = json.loads(blob_path(store, digest).read_bytes())
    assert entry["size"] == blob_path(store, digest).stat().st_size
    for descriptor in [manifest["config"], *manifest["layers"]]:
        assert blob_path(store, descriptor["digest"]).stat().st_size == descriptor["size"]


def test_it_resolves_by_tag_and_by_digest(store: LayoutStore) -> None:
    digest = build_image(store, f"{NAME}:v1", user="trainer")
    by_tag = store.resolve(f"{NAME}:v1")
    by_digest = store.resolve(f"{NAME}@{digest}")
    assert by_tag.digest == by_digest.digest == digest
    assert by_tag.user == by_digest.user == "trainer"


def test_it_keeps_many_repositories_in_one_layout(store: LayoutStore) -> None:
    build_image(store, f"{NAME}:v1", user="sft")
    build_image(store, "registry.nodus.local/trainers/dpo:v1", user="dpo")
    build_image(store, "other.registry/trainers/sft:v1", user="elsewhere")
    assert store.resolve(f"{NAME}:v1").user == "sft"
    assert store.resolve("registry.nodus.local/trainers/dpo:v1").user == "dpo"
    assert store.resolve("other.registry/trainers/sft:v1").user == "elsewhere"


def test_it_moves_a_tag_instead_of_duplicating_it(store: LayoutStore) -> None:
    first = build_image(store, f"{NAME}:v1", user="old")
    second = build_image(store, f"{NAME}:v1", user="new")
    assert first != second
    index = json.loads((store.root / "index.json").read_text())
    assert [e["digest"] for e in index["manifests"]] == [second]
    assert store.resolve(f"{NAME}:v1").user == "new"
    assert store.resolve(f"{NAME}@{first}").user == "old"  # still there by digest


def test_it_builds_the_same_image_to_the_same_digest(tmp_path: Path) -> None:
    one = build_image(LayoutStore(tmp_path / "one"), f"{NAME}:v1", user="u")
    two = build_image(LayoutStore(tmp_path / "two"), f"{NAME}:v1", user="u")
    assert one == two


def test_it_picks_linux_amd64_and_reads_docker_manifests(store: LayoutStore) -> None:
    build_image(store, f"{NAME}:multi", user="amd64-user", multi_arch=True)
    build_image(store, f"{NAME}:docker", user="docker-user", docker=True)
    multi = store.resolve(f"{NAME}:multi")
    assert (multi.media_type, multi.user) == (OCI_INDEX, "amd64-user")
    assert multi.user != DECOY_USER
    docker = store.resolve(f"{NAME}:docker")
    assert (docker.media_type, docker.user) == (DOCKER_MANIFEST, "docker-user")


def test_it_reports_missing_tags_and_digests(store: LayoutStore) -> None:
    with pytest.raises(ImageNotFound):
        store.resolve(f"{NAME}:v1")  # not even a layout yet
    build_image(store, f"{NAME}:v1")
    with pytest.raises(ImageNotFound):
        store.resolve(f"{NAME}:v2")
    with pytest.raises(ImageNotFound):
        store.resolve(f"{NAME}@sha256:{'1' * 64}")


def test_it_refuses_blobs_whose_bytes_changed(store: LayoutStore) -> None:
    digest = build_image(store, f"{NAME}:v1", user="trainer")
    path = blob_path(store, digest)
    path.write_bytes(path.read_bytes().replace(b'"schemaVersion"', b'"schemaVersion" '))
    with pytest.raises(DigestMismatch, match=digest):
        store.resolve(f"{NAME}@{digest}")
    with pytest.raises(DigestMismatch):
        store.resolve(f"{NAME}:v1")


def test_it_refuses_manifests_and_configs_over_the_limits(tmp_path: Path) -> None:
    build_image(LayoutStore(tmp_path), f"{NAME}:v1", user="trainer")
    with pytest.raises(ContentTooLarge, match="manifest"):
        LayoutStore(tmp_path, max_manifest_bytes=100).resolve(f"{NAME}:v1")
    with pytest.raises(ContentTooLarge, match="config"):
        LayoutStore(tmp_path, max_config_bytes=100).resolve(f"{NAME}:v1")


def test_it_signs_and_verifies_images_in_the_layout(store: LayoutStore) -> None:
    keys = generate_key_pair()
    digest = build_image(store, f"{NAME}:v1", user="trainer")
    ref = f"{NAME}@{digest}"
    with pytest.raises(SignatureMissing):
        inspect(store, ref, [keys.public_pem], require_signature=True)

    sign(store, ref, keys.private_pem)

    inspection = inspect(store, ref, [keys.public_pem], require_signature=True)
    assert (inspection.digest, inspection.user) == (digest, "trainer")
    assert (inspection.verified, inspection.key_fingerprint) == (True, keys.fingerprint)
    names = [
        e["annotations"][REF_NAME]
        for e in json.loads((store.root / "index.json").read_text())["manifests"]
    ]
    assert f"{NAME}:sha256-{digest.removeprefix('sha256:')}.sig" in names
