"""Test settings: the project's settings, as shipped, over a throwaway data dir.

Set before the project settings are imported, so no test ever touches a developer's `.data`.
Nothing here changes how a request is answered: reads go through the watch cache, views run on
the view pool, tokens and roles are remembered, as under `make run`. What makes that testable is
that every test's writes commit (tests/conftest.py), to a database file configured as shipped.
"""

import os
import tempfile

os.environ.setdefault("NODUS_DATA_DIR", tempfile.mkdtemp(prefix="nodus-test-"))
# The controller runs where a test starts it (tests/support/controller.py), never on its own.
os.environ.setdefault("NODUS_EMBEDDED_CONTROLLER", "0")

from nodus_console.settings import *  # noqa: F403

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file in WAL mode with the shipped busy timeout (the OPTIONS above), one per xdist
    # worker (pytest-django suffixes the name), not Django's in-memory shared-cache database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}  # noqa: F405

# The actors fixture hashes a password per actor per test; PBKDF2 would cost seconds a test.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
