"""Creates or updates a user: `manage.py createuser bob --password x [--staff]`."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create or update a user; prints the password when one was generated."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password", default="")
        parser.add_argument("--staff", action="store_true", help="a platform admin")

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"] or secrets.token_urlsafe(12)
        user, _ = get_user_model().objects.get_or_create(username=options["username"])
        user.set_password(password)
        user.is_staff = user.is_superuser = bool(options["staff"])
        user.save()
        if not options["password"]:
            self.stdout.write(f"password for {user.username}: {password}")
