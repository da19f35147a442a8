"""Seeds the accelerator catalog and the managed catalog (project `nodus`), idempotently.

Unless ``--no-images``, it first builds the catalogs' ``registry.nodus.dev`` images into the
local image layout, signs the managed ones with the data dir's key pair (DATA_DIR/keys, generated
on first use) and pins every runtime's image to the built digest, so the controller can verify
them without any network. A second run builds the same bytes and writes nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from runtimes.registry import seeding


class Command(BaseCommand):
    help = "Load the accelerator catalog and the managed runtimes; a second run changes nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-examples", action="store_true", help="skip the demo project's example"
        )
        parser.add_argument(
            "--no-images",
            action="store_true",
            help="keep the catalogs' image references as written (no build, no signing)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        image_for = None
        if not options["no_images"]:
            from runtimes.controller.seed_images import seed_images_from_django

            image_for = seed_images_from_django().image_for
        accelerators = seeding.seed_accelerators()
        managed = seeding.seed_manifests(seeding.MANAGED_CATALOG, image_for=image_for)
        self.stdout.write(f"accelerators: {accelerators}; managed runtimes: {managed}")
        if not options["no_examples"] and seeding.EXAMPLES.exists():
            from runtimes.storage.models import Project

            if Project.objects.filter(name="demo").exists():
                examples = seeding.seed_manifests(seeding.EXAMPLES, image_for=image_for)
                self.stdout.write(f"examples: {examples}")
