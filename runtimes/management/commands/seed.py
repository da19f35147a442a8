"""Seeds the accelerator catalog and the managed catalog (project `nodus`), idempotently."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from runtimes import seeding


class Command(BaseCommand):
    help = "Load the accelerator catalog and the managed runtimes; a second run changes nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-examples", action="store_true", help="skip the demo project's example"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        accelerators = seeding.seed_accelerators()
        managed = seeding.seed_manifests(seeding.MANAGED_CATALOG)
        self.stdout.write(f"accelerators: {accelerators}; managed runtimes: {managed}")
        if not options["no_examples"] and seeding.EXAMPLES.exists():
            from runtimes.models import Project

            if Project.objects.filter(name="demo").exists():
                self.stdout.write(f"examples: {seeding.seed_manifests(seeding.EXAMPLES)}")
