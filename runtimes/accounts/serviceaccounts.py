"""The controller's service account: a user of its own, with a token of its own.

The verification controller writes status as `access.CONTROLLER_ACCOUNT`, whether it runs in the
web process (`start_in_process`) or alone (`manage.py runcontroller`): every status write it
makes is checked, as an API client's, by `registry.authorization.check`, with the user its token
resolves to at that moment. Revoking that token or deactivating the account stops its writes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from runtimes.accounts.access import CONTROLLER_ACCOUNT, User
from runtimes.accounts.tokens import create_token, digest, user_for
from runtimes.storage.models import ApiToken

# The token comes from `$NODUS_CONTROLLER_TOKEN` (scale-out: `manage.py createtoken --user
# system:serviceaccount:nodus:controller`), else from `DATA_DIR/controller-token` (mode 0600),
# which is created with the account on first use. A token that the database knows but has revoked
# is kept, never silently replaced: an admin who revoked it meant the controller to stop; deleting
# the file (or setting a new token) lets it start again.

TOKEN_FILE = "controller-token"


def ensure_account(username: str = CONTROLLER_ACCOUNT) -> AbstractBaseUser:
    """The service account's user: no password (it never signs in), never staff."""
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    return user


def token_path() -> Path:
    return Path(settings.DATA_DIR) / TOKEN_FILE


def _write_private(path: Path, text: str) -> None:
    # Written beside and renamed: a second controller starting at once never reads half a token.
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    partial.replace(path)


_TOKEN_LOCK = threading.Lock()


def controller_token() -> str:
    """The controller's token: configured, kept in the data dir, or made (with the account)."""
    configured = settings.NODUS_CONTROLLER_TOKEN
    if configured:
        return str(configured)
    # The controller's threads (its reconcilers, its garbage collector) may ask at once: one
    # makes the token, the others read it, so the account never holds two.
    with _TOKEN_LOCK:
        path = token_path()
        kept = path.read_text().strip() if path.exists() else ""
        if kept and ApiToken.objects.filter(digest=digest(kept)).exists():
            return kept
        _row, token = create_token(ensure_account(), "controller")
        _write_private(path, token)
        return token


class ServiceAccount:
    """Credentials resolved to a user at every use, so a revocation applies to the next write."""

    def __init__(self, token: str | None = None) -> None:
        # A token handed in is the only one used; otherwise `controller_token` says which.
        self._token = token
        self._fixed = token is not None

    def user(self) -> User:
        if self._token is None:
            self._token = controller_token()
        user = user_for(self._token)
        if user is None and not self._fixed:
            # Revoked, deactivated, or from another database: look again at where tokens come
            # from, in case an operator has put a new one there.
            self._token = controller_token()
            user = user_for(self._token)
        return user if user is not None else AnonymousUser()
