"""Fixtures shared by the API tests; import them into a test module to use them."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """The actors fixture hashes four passwords per test; PBKDF2 makes that ~2 s a test."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
