"""What the controller will refuse of a runtime's image, known at admission: a registry that is
neither on NODUS_REGISTRY_ALLOW nor the local image layout's, which it never contacts (a warning
for a project's runtime; for a managed one (project nodus), which must be verified, an error),
and a managed runtime's image that the local layout holds unsigned (an error)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

from runtimes.apimachinery.fielderrors import FieldError

# The registry the embedded default's local image layout serves (`manage.py seed` fills it).
LAYOUT_REGISTRY = "registry.nodus.dev"
ANY_REGISTRY = "*"
DOCKER_HUB = "docker.io"
# Docker Hub answers to several names; an allow-list entry for one admits all of them.
HUB_ALIASES = frozenset({DOCKER_HUB, "registry-1.docker.io", "index.docker.io"})


def registry_of(image: str) -> str:
    """The registry host of a reference, as the controller's parser reads it (Docker Hub when the
    first path component is not a host)."""
    first, sep, _rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
        return first.lower()
    return DOCKER_HUB


def allowed(registry: str, allow_list: frozenset[str]) -> bool:
    entries = {entry.lower() for entry in allow_list}
    registry = registry.lower()
    if ANY_REGISTRY in entries or registry in entries:
        return True
    return registry in HUB_ALIASES and bool(entries & HUB_ALIASES)


def allow_list() -> frozenset[str]:
    text: str = settings.NODUS_REGISTRY_ALLOW
    return frozenset(entry.strip() for entry in text.split(",") if entry.strip())


def refused_registry(spec: Any) -> str | None:
    """The registry of the spec's image when the controller will not contact it, else None."""
    image = spec.get("image") if isinstance(spec, dict) else None
    if not isinstance(image, str) or not image:
        return None
    registry = registry_of(image)
    if registry == LAYOUT_REGISTRY or allowed(registry, allow_list()):
        return None
    return registry


# Whether the controller will certainly find an image unsigned, asked of the controller without
# importing it (it sits above admission): the runtimes app registers its layout check here.
_unsigned_checks: list[Callable[[str], bool]] = []


def register_unsigned_check(check: Callable[[str], bool]) -> None:
    if check not in _unsigned_checks:
        _unsigned_checks.append(check)


def managed_image_errors(spec: Any, old_spec: Any) -> list[FieldError]:
    """A managed runtime (project nodus) must be one the controller can verify: an image from a
    registry it will not contact, or one the local layout holds without a signature, is refused
    when the image is new or changes (a label on a runtime published before is still taken)."""
    image = spec.get("image") if isinstance(spec, dict) else None
    if not isinstance(image, str) or not image:
        return []
    if isinstance(old_spec, dict) and old_spec.get("image") == image:
        return []
    registry = refused_registry(spec)
    if registry is not None:
        return [
            FieldError(
                "spec.image",
                "FieldValueForbidden",
                f"Forbidden: registry {registry} is not on the allow-list "
                "(NODUS_REGISTRY_ALLOW): the controller would never verify this managed "
                "runtime's signature",
                f"Publish an image from an allowed registry, or ask an administrator to allow "
                f"{registry}.",
            )
        ]
    if any(check(image) for check in _unsigned_checks):
        return [
            FieldError(
                "spec.image",
                "FieldValueForbidden",
                f"Forbidden: the local image layout holds {image} without a cosign signature: "
                "the controller would mark this managed runtime Failed (SignatureMissing)",
                "Sign the image's digest with cosign and a key the platform trusts "
                "(`cosign sign --key KEY IMAGE@DIGEST`), then publish again.",
            )
        ]
    return []


def image_warnings(spec: dict[str, Any]) -> list[str]:
    registry = refused_registry(spec)
    if registry is None:
        return []
    return [
        f"spec.image: registry {registry} is not on the allow-list (NODUS_REGISTRY_ALLOW): the "
        "controller will not contact it and the runtime will turn Failed; ask an administrator "
        f"to allow {registry}, or use an image from an allowed registry"
    ]
