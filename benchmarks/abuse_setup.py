"""The abuse benchmark's accounts and objects, made in a subprocess with the server's settings.

    NODUS_DATA_DIR=... .venv/bin/python -m benchmarks.abuse_setup [--runtimes N] [--image REF]

Migrates the data dir, then makes the platform admin and the demo project (as `serve` would),
a viewer, an editor and a project admin of it, and a user whose password the login row guesses,
each with a password and a bearer token; a second token of the editor's, which the revocation
row revokes; and N runtimes (for the list herd, or the controller row's unreachable images).
Prints one JSON line. A subprocess, so the benchmark itself never opens the server's database
and runs alike on its own or as a case of `benchmarks/run.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
# The accounts of a throwaway data dir: the password is no secret.
PASSWORD = "abuse-benchmark-password"
ROLES = {"viewer": "viewer", "editor": "editor", "projadmin": "admin"}
# Users whose passwords the login rows guess (console, admin), so no one else is locked out.
GUESSED_USERS = ("guessed", "guessed-admin")
WATCHERS = 4


def runtime(name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"app": "trainer", "bench": "abuse"}},
        "spec": {"image": image, "task": "SFT", "command": ["python", "-m", "trainer"]},
    }


def prepare(runtimes: int, image: str) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from runtimes.accounts.bootstrap import ensure_admin, ensure_demo_project
    from runtimes.accounts.tokens import create_token
    from runtimes.registry.kinds import lookup
    from runtimes.storage import store
    from runtimes.storage.models import Membership

    call_command("migrate", interactive=False, verbosity=0)
    admin, admin_password, _generated = ensure_admin()
    project = ensure_demo_project(admin)
    users: dict[str, Any] = {
        "admin": {"password": admin_password, "token": create_token(admin, "abuse")[1]}
    }
    for username in [*ROLES, *GUESSED_USERS]:
        user, _ = get_user_model().objects.get_or_create(username=username)
        user.set_password(PASSWORD)
        user.save()
        if username in ROLES:
            Membership.objects.update_or_create(
                project=project, user_id=user.pk, defaults={"role": ROLES[username]}
            )
        users[username] = {"password": PASSWORD, "token": create_token(user, "abuse")[1]}
    editor = get_user_model().objects.get(username="editor")
    row, revocable = create_token(editor, "revoked while watching")
    users["editor"]["revocable"] = {"id": row.pk, "token": revocable}
    # Tokens for the herd of watches: the API counts seats per token, 100 watches each.
    viewer = get_user_model().objects.get(username="viewer")
    users["viewer"]["watchers"] = [create_token(viewer, f"watcher {i}")[1] for i in range(WATCHERS)]
    rt = lookup("trainingruntimes")
    assert rt is not None
    for i in range(runtimes):
        store.create(rt, project.name, runtime(f"bulk-{i:04d}", image))
    return {"namespace": project.name, "users": users, "runtimes": runtimes}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runtimes", type=int, default=0)
    parser.add_argument(
        "--image", default="registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nodus_console.settings")
    import django

    django.setup()
    print(orjson.dumps(prepare(args.runtimes, args.image)).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
