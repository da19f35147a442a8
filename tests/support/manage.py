"""Management commands run against a live server's data directory, as an operator would.

The live servers of tests/support/liveserver.py keep their database in their data directory;
`manage(server, ...)` runs `python manage.py ...` there, beside the running daphne, and
`shell(server, code)` runs Python in `manage.py shell` and returns what it printed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support import liveserver
from tests.support.liveserver import PYTHON, REPO, LiveServer


def manage(server: LiveServer, *args: str, timeout: float = 120) -> str:
    return manage_in(server.data_dir, *args, timeout=timeout)


def manage_in(data_dir: Path, *args: str, timeout: float = 120) -> str:
    """`python manage.py ARGS` on a data directory, with or without a server running on it."""
    done = subprocess.run(
        [str(PYTHON), str(REPO / "manage.py"), *args],
        cwd=REPO,
        # Looked up at each call: a fixture may have pointed it at another database.
        env=liveserver.server_environment(data_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def shell(server: LiveServer, code: str) -> str:
    return shell_in(server.data_dir, code)


def shell_in(data_dir: Path, code: str, timeout: float = 120) -> str:
    return manage_in(data_dir, "shell", "--verbosity=0", "-c", code, timeout=timeout)


def add_member(server: LiveServer, name: str, role: str, project: str = "demo") -> str:
    """Creates user `name` with `role` in `project` and returns a fresh API token of theirs."""
    manage(server, "createuser", name, "--password", f"{name}-pass")
    shell(
        server,
        "from django.contrib.auth import get_user_model\n"
        "from runtimes.storage.models import Membership\n"
        f"user = get_user_model().objects.get(username={name!r})\n"
        f"Membership.objects.update_or_create(project_id={project!r}, user=user, "
        f"defaults={{'role': {role!r}}})\n",
    )
    return manage(server, "createtoken", "--user", name, "--name", "live").strip()
