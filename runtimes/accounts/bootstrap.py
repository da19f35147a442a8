"""First-run setup for `manage.py serve` and the tests: the built-in admin, the demo project."""

from __future__ import annotations

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser

from runtimes.accounts.privatefiles import tighten, write_private
from runtimes.storage.models import Membership, Project, Role

DEMO_PROJECT = "demo"


def admin_password() -> tuple[str, bool]:
    """The admin's password and whether it was generated (and so must be printed).

    `$NODUS_ADMIN_PASSWORD` wins; otherwise one is generated on the first run and kept in the
    data dir (mode 0600), so every later run prints the same one.
    """
    if password := os.environ.get("NODUS_ADMIN_PASSWORD"):
        return password, False
    path = settings.DATA_DIR / "admin-password"
    if not path.exists():
        write_private(path, secrets.token_urlsafe(12).encode())
    tighten(path)
    return path.read_text().strip(), True


def ensure_admin() -> tuple[AbstractUser, str, bool]:
    password, generated = admin_password()
    user, _created = get_user_model().objects.get_or_create(username=settings.NODUS_ADMIN_USER)
    if not user.check_password(password) or not user.is_staff:
        user.set_password(password)
        user.is_staff = user.is_superuser = True
        user.save()
    return user, password, generated


def ensure_demo_project(admin: AbstractUser) -> Project:
    project, _ = Project.objects.get_or_create(
        name=DEMO_PROJECT, defaults={"display_name": "Demo project"}
    )
    Membership.objects.get_or_create(
        project=project, user_id=admin.pk, defaults={"role": Role.ADMIN}
    )
    return project
