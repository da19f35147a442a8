"""Positive access lookups remembered for a moment: a token's user, a user's role in a project.

Every API request looked up its bearer token and its caller's role in SQL, about a third of a
GET. Here a lookup that found something is remembered until access may have changed, which the
revocation epoch says (`accounts.revocation`: it moves after any token, role binding or user is
changed or deleted, in this process at once and in the others through their nudges and the
stored epoch they read once a second), and at most `NODUS_ACCESS_CACHE_SECONDS` (2 s). Nothing that
was refused is remembered: a new token or role binding works on the next request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import Any

from django.conf import settings

from runtimes.accounts import revocation

MAX_ENTRIES = 10_000
_all: list[EpochMemo] = []


def forget_all() -> None:
    """Drops every remembered lookup (tests that reuse ids across rolled-back transactions)."""
    for memo in _all:
        memo.clear()


class EpochMemo:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: dict[Hashable, tuple[int, float, Any]] = {}
        self._lock = threading.Lock()
        _all.append(self)

    @staticmethod
    def ttl() -> float:
        return float(settings.NODUS_ACCESS_CACHE_SECONDS)

    def get(self, key: Hashable) -> Any:
        """The remembered value, or None."""
        entry = self._entries.get(key)
        if entry is None or self.ttl() <= 0:
            return None
        epoch, until, value = entry
        if epoch != revocation.current() or time.monotonic() >= until:
            self._entries.pop(key, None)
            return None
        return value

    def clear(self) -> None:
        self._entries.clear()

    def put(self, key: Hashable, value: Any, epoch: int) -> None:
        """Remembers `value`, found by a lookup that began at `epoch` (a change committed during
        the lookup moves the epoch past it, so the value is never served)."""
        ttl = self.ttl()
        if ttl <= 0 or value is None:
            return
        revocation.follow()  # changes made by other processes must reach what is remembered
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (epoch, time.monotonic() + ttl, value)
