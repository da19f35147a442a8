"""``manage.py generate_key``: a cosign key pair for signing runtime images.

Like ``cosign generate-key-pair``: writes PREFIX.key (PKCS#8 PEM, mode 0600, encrypted when
``COSIGN_PASSWORD`` is set) and PREFIX.pub (PEM). The public key works with
``cosign verify --key``; list it in NODUS_TRUSTED_KEYS to trust its signatures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.controller.seed_images import key_files, write_key_pair
from runtimes.controller.signing.cosign import generate_key_pair


class Command(BaseCommand):
    help = "Generate an ECDSA P-256 cosign key pair: PREFIX.key (0600) and PREFIX.pub."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output-key-prefix", default="cosign", help="file name prefix (default cosign)"
        )
        parser.add_argument("--dir", default=".", help="folder to write into (default .)")
        parser.add_argument("--force", action="store_true", help="overwrite existing files")

    def handle(self, *args: Any, **options: Any) -> None:
        files = key_files(Path(options["dir"]), options["output_key_prefix"])
        existing = [str(path) for path in (files.private, files.public) if path.exists()]
        if existing and not options["force"]:
            raise CommandError(f"{', '.join(existing)} already exist; pass --force to replace")
        password = os.environ.get("COSIGN_PASSWORD", "").encode() or None
        pair = generate_key_pair(password)
        write_key_pair(pair, files)
        self.stdout.write(f"Private key written to {files.private}")
        self.stdout.write(f"Public key written to {files.public}")
        self.stdout.write(f"Fingerprint (sha256 of the public key DER): {pair.fingerprint}")
