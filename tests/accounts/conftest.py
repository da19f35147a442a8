"""A real OpenID provider on a loopback port, and the server's OIDC settings pointing at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from runtimes.accounts import oidc
from runtimes.accounts.oidcconfig import config
from tests.support import oidc as provider_support


@pytest.fixture
def provider(settings: Any) -> Iterator[provider_support.Provider]:
    running = provider_support.start()
    settings.NODUS_OIDC_ISSUER_URL = running.issuer
    settings.NODUS_OIDC_CLIENT_ID = provider_support.CLIENT_ID
    settings.NODUS_OIDC_CLIENT_SECRET = provider_support.CLIENT_SECRET
    settings.NODUS_OIDC_USERNAME_PREFIX = "oidc:"
    settings.NODUS_OIDC_GROUPS_PREFIX = "oidc:"
    config.cache_clear()
    oidc.forget_keys()
    yield running
    provider_support.stop(running)
    config.cache_clear()
    oidc.forget_keys()
