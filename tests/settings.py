"""Test settings: the project's settings over a throwaway data dir, without the controller thread.

Set before the project settings are imported, so no test ever touches a developer's `.data`.
"""

import os
import tempfile

os.environ.setdefault("NODUS_DATA_DIR", tempfile.mkdtemp(prefix="nodus-test-"))
os.environ.setdefault("NODUS_EMBEDDED_CONTROLLER", "0")
# The test client's requests run inside each test's transaction, which the hub's thread (and so
# the watch cache) cannot see: in-process tests read SQL. Live servers (tests/support/
# liveserver.py) and the watch cache's own tests (tests/watch/test_cache*.py) run it.
os.environ.setdefault("NODUS_WATCH_CACHE", "0")
# Tests change tokens and roles with queryset updates, which send no signals: look them up on
# every request (tests/accounts/test_memo.py and the live servers cover the remembered path).
os.environ.setdefault("NODUS_ACCESS_CACHE_SECONDS", "0")

from nodus_console.settings import *  # noqa: F403

# API views run on the test's own thread, inside its transaction (runtimes.api.viewpool).
NODUS_VIEW_POOL = False
# A token's last use is written by the request that used it, in the test's transaction.
NODUS_TOKEN_TOUCH_SECONDS = 0

# The actors fixture hashes a password per actor per test; PBKDF2 would cost seconds a test.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
