"""Typed failures of image inspection; each class name is the condition reason it maps to.

The reconcile loop turns an ``ImageError`` into a ``Verified``/``Ready`` condition with
``reason = exc.reason`` and ``message = str(exc)``. ``Transient`` is the one family callers retry
with backoff: the registry may answer next time, so it must not flip the runtime to Failed.
"""

from __future__ import annotations


class ImageError(Exception):
    """Base of every error the image layer raises on purpose."""

    reason: str = "ImageError"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        # The reason is the class name unless a subclass says otherwise, so the mapping to
        # condition reasons cannot drift from the names callers catch.
        if "reason" not in cls.__dict__:
            cls.reason = cls.__name__


class InvalidImageReference(ImageError, ValueError):
    """The reference string does not parse, or lacks a required digest."""


class ImageNotFound(ImageError):
    """The repository, tag, manifest or a blob it names does not exist."""


class DigestMismatch(ImageError):
    """The bytes received do not hash to the digest that was asked for."""


class RegistryRefused(ImageError):
    """The registry is not on the allow-list; it was not contacted."""


class RegistryUnauthorized(ImageError):
    """The registry refused our credentials (or anonymous access)."""


class ManifestInvalid(ImageError):
    """A manifest or config is malformed, of an unsupported media type, or has no linux/amd64."""


class ContentTooLarge(ImageError):
    """A manifest, config or signature payload is larger than the configured limit."""


class SignatureMissing(ImageError):
    """No cosign signature manifest (or an empty one) exists for the image digest."""


class SignatureInvalid(ImageError):
    """Signatures exist, but none verifies against a trusted key for this digest."""


class Transient(ImageError):
    """Connection refused, timeout, 5xx or 429: worth retrying later."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RegistryUnavailable(Transient):
    """The registry could not be reached or answered 5xx/429."""

    reason = "RegistryUnavailable"
