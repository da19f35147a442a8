"""What the controller can tell admission before it reconciles: a managed runtime's image that
the local image layout holds without a cosign signature. The layout is a directory on this
machine, so admission can know that for certain, as the controller would find it, without
contacting any registry; an image anywhere else stays unknown until the controller looks.

The runtimes app registers `unsigned_in_layout` with `registry.trainingruntime.images` (admission
sits below the controller and must not import it).
"""

from __future__ import annotations

from runtimes.controller.oci.client import RegistrySettings
from runtimes.controller.oci.errors import ImageError
from runtimes.controller.oci.reference import parse_reference
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.settings import layout_root
from runtimes.controller.signing.cosign import signature_tag


def unsigned_in_layout(image: str) -> bool:
    """True when the controller would read `image` from the local layout, which holds its
    manifest and no signature for it; False when it is signed, elsewhere, or the layout cannot
    say (no layout, an unreadable index). Reads the layout's index and one manifest."""
    try:
        ref = parse_reference(image)
    except ImageError:
        return False
    # The layout alone: the registries' settings (credentials files) play no part here.
    sources = ImageSources(layout_root(), RegistrySettings(allowed_registries=frozenset()))
    if sources.for_reference(ref) is not sources.layout:
        return False  # a registry's image: unknown until the controller asks it
    try:
        digest = sources.layout.fetch_manifest(ref).digest
    except (ImageError, OSError):
        return False  # the controller will say the image is missing; not this check's verdict
    try:
        sources.layout.fetch_manifest(ref.with_tag(signature_tag(digest)))
    except ImageError:
        return True
    except OSError:
        return False
    return False
