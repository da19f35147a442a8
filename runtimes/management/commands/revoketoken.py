"""Revokes API tokens: `manage.py revoketoken --user bob --name ci` (or `--all`, or `--list`).

Revocation takes effect at once for new requests and, within NODUS_REVOCATION_POLL_SECONDS plus
NODUS_STREAM_POLL_SECONDS (2 s), for the user's open watches and websockets in every server
process, with or without Redis (runtimes.accounts.revocation, runtimes.watch.guard). Tokens are
stored only as digests, so a token is named by its user and name, and shown by the prefix the
Tokens page shows.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from runtimes.accounts.tokens import revoke
from runtimes.storage.models import ApiToken


class Command(BaseCommand):
    help = "Revoke a user's API tokens by name (or all of them); --list shows them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True)
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--name", help="revoke the user's live tokens with this name")
        which.add_argument("--all", action="store_true", help="revoke every live token")
        which.add_argument("--list", action="store_true", help="list tokens; revoke nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no user {options['user']!r}")
        tokens = ApiToken.objects.filter(user=user).order_by("created_at", "pk")
        if options["list"]:
            for row in tokens:
                state = f"revoked {row.revoked_at:%Y-%m-%d %H:%M}" if row.revoked_at else "live"
                self.stdout.write(f"{row.name}\t{row.prefix}…\t{state}")
            return
        live = tokens.filter(revoked_at__isnull=True)
        if not options["all"]:
            live = live.filter(name=options["name"])
        with transaction.atomic():
            rows = list(live.select_for_update())
            if not rows:
                names = sorted({row.name for row in tokens if row.revoked_at is None})
                wanted = "tokens" if options["all"] else f"token named {options['name']!r}"
                raise CommandError(
                    f"{options['user']!r} has no live {wanted}; "
                    f"live tokens: {', '.join(names) or 'none'} (see --list)"
                )
            for row in rows:
                revoke(row)
        self.stdout.write(f"revoked {len(rows)} token(s) of {options['user']}")
