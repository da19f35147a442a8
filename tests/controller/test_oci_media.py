"""Manifest media types and shapes: what resolution accepts and how it refuses the rest."""

import json

import pytest

from runtimes.controller.oci.errors import ManifestInvalid
from runtimes.controller.oci.media import (
    DOCKER_MANIFEST_LIST,
    OCI_INDEX,
    OCI_MANIFEST,
    ImageIndex,
    config_user,
    manifest_media_type,
    parse_manifest,
    select_platform,
)

DIGEST = "sha256:" + "a" * 64


def entry(os: str, architecture: str, digest: str = DIGEST) -> dict[str, object]:
    return {
        "mediaType": OCI_MANIFEST,
        "digest": digest,
        "size": 10,
        "platform": {"os": os, "architecture": architecture},
    }


def test_it_takes_the_media_type_from_the_header_then_the_document_then_the_shape() -> None:
    index = json.dumps({"schemaVersion": 2, "manifests": []}).encode()
    assert manifest_media_type(index, DOCKER_MANIFEST_LIST + "; charset=utf-8") == (
        DOCKER_MANIFEST_LIST
    )
    assert manifest_media_type(index, "application/octet-stream") == OCI_INDEX
    typed = json.dumps({"mediaType": OCI_MANIFEST, "config": {}, "layers": []}).encode()
    assert manifest_media_type(typed, None) == OCI_MANIFEST


def test_it_refuses_schema1_and_unknown_documents() -> None:
    schema1 = json.dumps({"schemaVersion": 1, "name": "x", "fsLayers": []}).encode()
    with pytest.raises(ManifestInvalid, match="unsupported"):
        manifest_media_type(schema1, "application/vnd.docker.distribution.manifest.v1+prettyjws")
    with pytest.raises(ManifestInvalid, match="schemaVersion"):
        parse_manifest(schema1, OCI_MANIFEST)
    with pytest.raises(ManifestInvalid, match="not JSON"):
        parse_manifest(b"\xff", OCI_MANIFEST)


def test_it_refuses_descriptors_without_a_sha256_digest() -> None:
    manifest = {
        "schemaVersion": 2,
        "config": {"mediaType": "x", "digest": "md5:abc", "size": 1},
        "layers": [],
    }
    with pytest.raises(ManifestInvalid, match=r"config\.digest"):
        parse_manifest(json.dumps(manifest).encode(), OCI_MANIFEST)


def test_it_selects_linux_amd64_wherever_it_is_listed() -> None:
    amd64 = "sha256:" + "b" * 64
    document = {
        "schemaVersion": 2,
        "manifests": [
            entry("linux", "arm64"),
            entry("windows", "amd64"),
            entry("linux", "amd64", amd64),
        ],
    }
    index = parse_manifest(json.dumps(document).encode(), OCI_INDEX)
    assert isinstance(index, ImageIndex)
    assert select_platform(index).digest == amd64


def test_it_says_which_platforms_an_index_offers_when_amd64_is_missing() -> None:
    index = parse_manifest(
        json.dumps({"schemaVersion": 2, "manifests": [entry("linux", "arm64")]}).encode(),
        OCI_INDEX,
    )
    assert isinstance(index, ImageIndex)
    with pytest.raises(ManifestInvalid, match="linux/arm64"):
        select_platform(index)


@pytest.mark.parametrize(
    ("config", "user"),
    [
        ({"config": {"User": "1000:1000"}}, "1000:1000"),
        ({"config": {"User": ""}}, "root"),
        ({"config": {}}, "root"),
        ({"config": None}, "root"),
        ({}, "root"),
    ],
)
def test_it_reads_the_config_user_defaulting_to_root(config: dict[str, object], user: str) -> None:
    assert config_user(json.dumps(config).encode()) == user


def test_it_refuses_a_config_user_that_is_not_a_string() -> None:
    with pytest.raises(ManifestInvalid, match="User"):
        config_user(json.dumps({"config": {"User": 0}}).encode())
