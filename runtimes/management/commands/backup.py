"""Takes a consistent online backup of the store: `manage.py backup FILE`.

The server may keep serving and writing meanwhile (runtimes.storage.backups). SQLite gives a
SQLite file, PostgreSQL a pg_dump archive; either is restored with `manage.py restore FILE`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.storage import backups


class Command(BaseCommand):
    help = "Write a consistent online snapshot of the store to FILE (the server may keep running)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self.stdout.write(backups.take(options["file"]))
        except (backups.BackupError, OSError) as error:
            raise CommandError(str(error)) from error
