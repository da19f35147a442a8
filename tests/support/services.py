"""The machine's PostgreSQL and Redis for services tests: reachability and throwaway databases.

Under CI a missing service fails the test (CI must start it); on a developer's machine it skips.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


def listening(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def require(host: str, port: int, what: str) -> None:
    if listening(host, port):
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is not listening on {host}:{port}")
    pytest.skip(f"needs {what} on {host}:{port}")


def require_postgres() -> None:
    require(PG_HOST, PG_PORT, "PostgreSQL")


def require_redis() -> None:
    require(REDIS_HOST, REDIS_PORT, "Redis")


@contextmanager
def temp_database(prefix: str = "nodus_test") -> Iterator[str]:
    """A fresh PostgreSQL database; yields its DATABASE_URL and drops it (connections and all)."""
    require_postgres()
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
