"""Creates an API token and prints it once: `manage.py createtoken --user bob --name ci`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.accounts.tokens import create_token


class Command(BaseCommand):
    help = "Create an API token (shown once; stored hashed) for a user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True)
        parser.add_argument("--name", default="cli")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no user {options['user']!r}")
        _row, token = create_token(user, options["name"])
        self.stdout.write(token)
