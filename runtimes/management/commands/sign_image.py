"""``manage.py sign_image --key KEY IMAGE@DIGEST``: a cosign signature for a published image.

Writes the signature where cosign does (the ``sha256-<hex>.sig`` tag of the image's
repository): in the local image layout when it holds the repository, else in the registry
(which must be on NODUS_REGISTRY_ALLOW; credentials from NODUS_REGISTRY_CREDENTIALS). An
encrypted key's password comes from ``COSIGN_PASSWORD``, as with cosign.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.controller import settings as controller_settings
from runtimes.controller.oci.errors import ImageError
from runtimes.controller.oci.reference import parse_reference
from runtimes.controller.oci.sources import ImageSources
from runtimes.controller.signing.cosign import key_fingerprint, load_private_key, sign


class Command(BaseCommand):
    help = "Sign IMAGE@DIGEST with a cosign private key; the signature goes next to the image."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("image", help="a digest-pinned reference: repo[:tag]@sha256:<hex>")
        parser.add_argument("--key", required=True, help="PEM private key (generate_key makes one)")

    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get("COSIGN_PASSWORD", "").encode() or None
        try:
            private_key = load_private_key(Path(options["key"]).read_bytes(), password)
        except (OSError, ValueError, TypeError) as exc:
            raise CommandError(f"cannot load the signing key {options['key']}: {exc}") from None
        config = controller_settings.from_django()
        sources = ImageSources(config.layout_root, config.registry)
        try:
            ref = parse_reference(options["image"], require_digest=True)
            source = sources.for_reference(ref)
            digest = sign(source, ref, private_key)
        except ImageError as exc:
            raise CommandError(f"{exc.reason}: {exc}") from None
        finally:
            sources.close()
        where = "image layout" if source is sources.layout else "registry"
        self.stdout.write(f"Signed {ref.name}@{ref.digest} ({where})")
        self.stdout.write(f"  signature manifest: {digest}")
        self.stdout.write(f"  key fingerprint:    {key_fingerprint(private_key.public_key())}")
