"""Creates a project (a namespace) and optionally grants roles:
`manage.py createproject demo --admin alice --editor bob --viewer carol`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.metadata_rules import validate_namespace
from runtimes.storage.models import Membership, Project, Role


class Command(BaseCommand):
    help = "Create a project (idempotent) and grant roles in it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--display-name", default="")
        for role in Role:
            parser.add_argument(f"--{role.value}", action="append", default=[], metavar="USER")

    def handle(self, *args: Any, **options: Any) -> None:
        problems: list[FieldError] = validate_namespace(options["name"], "name")
        if problems:
            raise CommandError("; ".join(str(p) for p in problems))
        project, created = Project.objects.get_or_create(
            name=options["name"], defaults={"display_name": options["display_name"]}
        )
        users = get_user_model().objects
        for role in Role:
            for username in options[role.value]:
                user = users.filter(username=username).first()
                if user is None:
                    raise CommandError(f"no user {username!r}")
                Membership.objects.update_or_create(
                    project=project, user=user, defaults={"role": role}
                )
        self.stdout.write(f"project {project.name} {'created' if created else 'exists'}")
