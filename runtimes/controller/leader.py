"""One controller leader at a time: a PostgreSQL advisory lock, or a file lock on SQLite.

On PostgreSQL the lock is ``pg_try_advisory_lock`` held by a dedicated connection of its own
(Django recycles its connections, which would silently drop a session lock). When the leader
dies its connection closes, the server releases the lock, and a standby that retries every
second or so takes over. On SQLite (one machine by definition) an ``flock`` beside the data
serves the same purpose, and the kernel releases it when the process dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Protocol

log = logging.getLogger("nodus.controller")

# A fixed 64-bit key in the advisory lock space, derived from a name so it is stable and
# unlikely to collide with another application's locks in a shared database.
LOCK_KEY = int.from_bytes(
    hashlib.sha256(b"nodus-console/controller-leader").digest()[:8], "big", signed=True
)
# Django-only OPTIONS keys that libpq does not know.
_DJANGO_OPTIONS = {"pool", "server_side_binding", "isolation_level", "assume_role", "test_name"}


class LeaderLock(Protocol):
    def try_acquire(self) -> bool:
        """Takes the lock if it is free; never blocks for long."""
        ...

    def still_held(self) -> bool:
        """False once the lock is known to be lost (the connection dropped)."""
        ...

    def release(self) -> None: ...


class PostgresAdvisoryLock:
    """A session-level advisory lock on a connection that lives as long as the leadership."""

    def __init__(self, params: Mapping[str, Any], key: int = LOCK_KEY) -> None:
        self.params = dict(params)
        self.key = key
        self._connection: Any = None

    def try_acquire(self) -> bool:
        import psycopg

        try:
            if self._connection is None or self._connection.closed:
                self._connection = psycopg.connect(
                    **self.params, autocommit=True, connect_timeout=5
                )
            query = "SELECT pg_try_advisory_lock(%s)"
            row = self._connection.execute(query, (self.key,)).fetchone()
        except psycopg.Error as exc:
            log.warning("leader lock: PostgreSQL unreachable: %s", exc)
            self._drop()
            return False
        return bool(row and row[0])

    def still_held(self) -> bool:
        import psycopg

        if self._connection is None or self._connection.closed:
            return False
        try:
            self._connection.execute("SELECT 1")
        except psycopg.Error:
            self._drop()
            return False
        return True

    def release(self) -> None:
        import psycopg

        if self._connection is not None and not self._connection.closed:
            # Closing the session below releases the lock anyway.
            with contextlib.suppress(psycopg.Error):
                self._connection.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        self._drop()

    def _drop(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None


class FileLock:
    """An exclusive ``flock`` on one file; released by the kernel if the process dies."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._handle: IO[str] | None = None

    def try_acquire(self) -> bool:
        if self._handle is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    def still_held(self) -> bool:
        return self._handle is not None

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def postgres_params(database: Mapping[str, Any]) -> dict[str, Any]:
    """psycopg connection keywords from one entry of Django's DATABASES."""
    params: dict[str, Any] = {
        "dbname": database.get("NAME"),
        "user": database.get("USER"),
        "password": database.get("PASSWORD"),
        "host": database.get("HOST"),
        "port": database.get("PORT"),
    }
    params = {key: value for key, value in params.items() if value}
    for key, value in (database.get("OPTIONS") or {}).items():
        if key not in _DJANGO_OPTIONS:
            params[key] = value
    params.setdefault("application_name", f"nodus-controller-{os.getpid()}")
    return params


def lock_for(database: Mapping[str, Any], lock_path: Path) -> LeaderLock:
    """The leader lock that fits the database engine."""
    if "postgresql" in str(database.get("ENGINE", "")):
        return PostgresAdvisoryLock(postgres_params(database))
    return FileLock(lock_path)


def lead(
    lock: LeaderLock,
    work: Callable[[threading.Event], None],
    stop: threading.Event,
    *,
    retry_seconds: float = 1.0,
    on_change: Callable[[bool], None] | None = None,
) -> None:
    """Runs ``work`` whenever we hold the lock, until ``stop``; stands by in between.

    ``work`` gets an event that is set when it must return: on ``stop``, or when the lock is
    lost (then another instance may already lead, so two must never work at once).
    """
    while not stop.is_set():
        if not lock.try_acquire():
            stop.wait(retry_seconds)
            continue
        if on_change:
            on_change(True)
        resign = threading.Event()
        watchdog = threading.Thread(
            target=_watch, args=(lock, stop, resign, retry_seconds), daemon=True
        )
        watchdog.start()
        try:
            work(resign)
        finally:
            resign.set()
            watchdog.join()
            lock.release()
            if on_change:
                on_change(False)
        if not stop.is_set():
            log.warning("controller: lost the leader lock; standing by")


def _watch(
    lock: LeaderLock, stop: threading.Event, resign: threading.Event, interval: float
) -> None:
    checked = time.monotonic()
    while not resign.wait(0.1):
        if stop.is_set():
            resign.set()
        elif time.monotonic() - checked >= interval:
            checked = time.monotonic()
            if not lock.still_held():
                log.error("controller: the leader lock's connection is gone; resigning")
                resign.set()
