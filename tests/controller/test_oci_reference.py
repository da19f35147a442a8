"""Image reference parsing: registries, Docker Hub defaults, tags, digests and clear errors."""

import re

import pytest

from runtimes.controller.oci.errors import InvalidImageReference
from runtimes.controller.oci.reference import parse_reference

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("busybox", "docker.io", "library/busybox", None, None),
        ("busybox:1.36", "docker.io", "library/busybox", "1.36", None),
        ("nodus/trainer@" + DIGEST, "docker.io", "nodus/trainer", None, DIGEST),
        ("ghcr.io/nodus/sft:v1@" + DIGEST, "ghcr.io", "nodus/sft", "v1", DIGEST),
        ("127.0.0.1:5000/a/b/c:t", "127.0.0.1:5000", "a/b/c", "t", None),
        ("localhost/x", "localhost", "x", None, None),
        ("[::1]:5000/x:y", "[::1]:5000", "x", "y", None),
        ("Registry.Example.COM/a_b__c-d.e", "registry.example.com", "a_b__c-d.e", None, None),
    ],
)
def test_it_parses_references(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (
        registry,
        repository,
        tag,
        digest,
    )


def test_it_round_trips_the_normalized_form() -> None:
    ref = parse_reference("ghcr.io/nodus/sft:v1@" + DIGEST)
    assert parse_reference(str(ref)) == ref
    assert str(parse_reference("busybox")) == "docker.io/library/busybox"


def test_it_addresses_manifests_by_digest_before_tag() -> None:
    assert parse_reference("ghcr.io/a:v1@" + DIGEST).reference == DIGEST
    assert parse_reference("ghcr.io/a:v1").reference == "v1"
    assert parse_reference("ghcr.io/a").reference == "latest"


def test_it_talks_to_docker_hub_on_its_api_host() -> None:
    assert parse_reference("busybox").api_host == "registry-1.docker.io"
    assert parse_reference("ghcr.io/a").api_host == "ghcr.io"


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "empty"),
        ("ghcr.io/a@sha256:abc", "not sha256:<64 lowercase hex>"),
        ("ghcr.io/a@sha256:" + "AB" * 32, "not sha256:<64 lowercase hex>"),
        ("ghcr.io/a@md5:" + "ab" * 16, "not sha256"),
        ("ghcr.io/Upper/case", "invalid repository component 'Upper'"),
        ("ghcr.io/a:bad/tag", "invalid repository component"),
        ("ghcr.io/a:-tag", "invalid tag '-tag'"),
        ("ghcr.io/", "has no repository"),
        ("ghcr.io/a//b", "invalid repository component ''"),
        ("a b", "whitespace"),
    ],
)
def test_it_refuses_malformed_references_saying_why(text: str, complaint: str) -> None:
    with pytest.raises(InvalidImageReference, match=re.escape(complaint)):
        parse_reference(text)


def test_it_requires_a_digest_when_asked() -> None:
    with pytest.raises(InvalidImageReference, match="not pinned"):
        parse_reference("ghcr.io/a:v1", require_digest=True)
    assert parse_reference("ghcr.io/a@" + DIGEST, require_digest=True).digest == DIGEST


def test_it_maps_errors_to_condition_reasons() -> None:
    with pytest.raises(InvalidImageReference) as caught:
        parse_reference("")
    assert caught.value.reason == "InvalidImageReference"
    assert isinstance(caught.value, ValueError)
