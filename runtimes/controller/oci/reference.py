"""Image references: ``[registry/]repository[:tag][@sha256:<64 hex>]``.

Follows the grammar of distribution's ``reference`` package closely enough for runtime specs:
the first path component is a registry when it holds a dot or colon or is ``localhost``;
otherwise the image lives on Docker Hub, where one-component names gain ``library/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from runtimes.controller.oci.errors import InvalidImageReference

DOCKER_HUB = "docker.io"
# Docker Hub's API does not answer on docker.io itself.
DOCKER_HUB_API_HOST = "registry-1.docker.io"

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_REGISTRY = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)
MAX_NAME_LENGTH = 255


@dataclass(frozen=True)
class ImageReference:
    registry: str  # host[:port] as written, e.g. ghcr.io or 127.0.0.1:5000
    repository: str  # path inside the registry, e.g. library/busybox
    tag: str | None = None
    digest: str | None = None  # sha256:<64 lowercase hex>

    @property
    def name(self) -> str:
        """``registry/repository``, the identity cosign signs as docker-reference."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API_HOST if self.registry == DOCKER_HUB else self.registry

    @property
    def reference(self) -> str:
        """What goes after ``/manifests/``: the digest when pinned, else the tag."""
        if self.digest:
            return self.digest
        return self.tag or "latest"

    def with_tag(self, tag: str) -> ImageReference:
        if not _TAG.fullmatch(tag):
            raise InvalidImageReference(f"invalid tag {tag!r}")
        return replace(self, tag=tag, digest=None)

    def with_digest(self, digest: str) -> ImageReference:
        if not _DIGEST.fullmatch(digest):
            raise InvalidImageReference(f"invalid digest {digest!r}: want sha256:<64 hex>")
        return replace(self, digest=digest)

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


def parse_reference(text: str, *, require_digest: bool = False) -> ImageReference:
    """Parses ``text``; raises ``InvalidImageReference`` saying which part is wrong."""
    if not isinstance(text, str) or not text:
        raise InvalidImageReference("image reference is empty")
    if text != text.strip() or any(ch.isspace() for ch in text):
        raise InvalidImageReference(f"image reference {text!r} contains whitespace")
    remainder, digest = text, None
    if "@" in remainder:
        remainder, digest = remainder.split("@", 1)
        if not _DIGEST.fullmatch(digest):
            raise InvalidImageReference(
                f"image reference {text!r}: digest {digest!r} is not sha256:<64 lowercase hex>"
            )
    elif require_digest:
        raise InvalidImageReference(
            f"image reference {text!r} is not pinned: append @sha256:<64 lowercase hex>"
        )
    tag = None
    last_slash = remainder.rfind("/")
    colon = remainder.rfind(":")
    if colon > last_slash:  # a colon after the last slash starts the tag, not a port
        remainder, tag = remainder[:colon], remainder[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise InvalidImageReference(f"image reference {text!r}: invalid tag {tag!r}")
    registry, repository = _split_registry(remainder, text)
    for component in repository.split("/"):
        if not _COMPONENT.fullmatch(component):
            raise InvalidImageReference(
                f"image reference {text!r}: invalid repository component {component!r} "
                "(lowercase letters, digits and single separators . _ __ -)"
            )
    if len(f"{registry}/{repository}") > MAX_NAME_LENGTH:
        raise InvalidImageReference(f"image reference {text!r}: name longer than 255 characters")
    return ImageReference(registry=registry, repository=repository, tag=tag, digest=digest)


def _split_registry(name: str, text: str) -> tuple[str, str]:
    if not name:
        raise InvalidImageReference(f"image reference {text!r} has no repository")
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        if not _REGISTRY.fullmatch(first):
            raise InvalidImageReference(f"image reference {text!r}: invalid registry {first!r}")
        if not rest:
            raise InvalidImageReference(f"image reference {text!r} has no repository")
        return first.lower(), rest
    repository = name if sep else f"library/{name}"
    return DOCKER_HUB, repository
