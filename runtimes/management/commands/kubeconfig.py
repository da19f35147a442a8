"""Prints a kubeconfig with a fresh token for a user: `manage.py kubeconfig --user alice`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.accounts.kubeconfig import api_server, kubeconfig


class Command(BaseCommand):
    help = "Print a kubeconfig (with a new API token) that points kubectl at this console."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the user the token acts as")
        parser.add_argument(
            "--server",
            default="",
            help="the API URL (default: $NODUS_PUBLIC_URL or http://$HOST:$PORT)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["user"], is_active=True).first()
        if user is None:
            raise CommandError(
                f"no active user {options['user']!r}; create one first (manage.py createuser)"
            )
        server = options["server"] or api_server()
        if server.startswith("http://"):
            self.stderr.write(
                "warning: kubectl sends bearer tokens only over https; use the TLS port"
            )
        self.stdout.write(kubeconfig(user, server), ending="")
