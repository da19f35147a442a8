"""Restores a backup into an empty store: `manage.py restore FILE` (runtimes.storage.backups).

Refuses a database that already holds tables. Resource versions continue past anything the old
server handed out, and watches from before the restore get 410 Expired and re-list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.storage import backups


class Command(BaseCommand):
    help = "Restore a backup taken by `manage.py backup` into an empty data directory or database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--bump-revision",
            type=int,
            default=backups.DEFAULT_BUMP,
            help="how far resource versions jump past the backup's (as etcdutl's option)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["bump_revision"] < 1:
            raise CommandError("--bump-revision must be at least 1")
        try:
            self.stdout.write(backups.restore(options["file"], options["bump_revision"]))
        except (backups.BackupError, OSError) as error:
            raise CommandError(str(error)) from error
