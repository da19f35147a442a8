"""Fixtures the revocation tests share."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import pytest


@pytest.fixture
def tag() -> str:
    """A fresh suffix for names, so tests sharing a live server never collide."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Closes the test's sockets, whatever happens."""
    with ExitStack() as opened:
        yield opened
