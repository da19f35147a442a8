"""Prints what each role can do, from the endpoint declarations; `--write` updates the docs.

python manage.py rolematrix            # the Markdown section, on stdout
python manage.py rolematrix --write    # into docs/security.md, between its markers
python manage.py rolematrix --check    # exit 1 if docs/security.md's copy is stale
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.management import rolematrix


class Command(BaseCommand):
    help = "Print (or write into docs/security.md) the role matrix generated from the code."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="update docs/security.md")
        parser.add_argument("--check", action="store_true", help="fail if it is out of date")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["write"]:
            changed = rolematrix.write()
            self.stdout.write(f"{rolematrix.DOCUMENT}: {'updated' if changed else 'up to date'}")
        elif options["check"]:
            current = rolematrix.section_of(rolematrix.DOCUMENT.read_text())
            if current != rolematrix.render():
                raise CommandError(
                    f"{rolematrix.DOCUMENT}'s role matrix is out of date: "
                    "run `python manage.py rolematrix --write`"
                )
            self.stdout.write("role matrix up to date")
        else:
            self.stdout.write(rolematrix.render())
