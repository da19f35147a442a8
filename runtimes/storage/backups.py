"""Backups of the whole store, taken online, and their restore into an empty database.

SQLite: SQLite's online backup API copies the database in one step under one read transaction
(a consistent snapshot; writers go on beside it, as WAL lets them). PostgreSQL: `pg_dump` in its
custom format (one repeatable-read snapshot of every table), restored with `pg_restore`.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import F

from runtimes.storage.models import RevisionCounter

# A restore goes only into an empty database (no tables), and then does what `etcdutl snapshot
# restore --bump-revision --mark-compacted` does: the revision counter jumps by `bump` (beyond any
# revision the old server handed out after the snapshot), and every revision before the new one is
# compacted, so resource versions stay monotonic and a watch or list from an older one gets 410
# Expired and re-lists, as after an etcd restore.

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_DUMP_MAGIC = b"PGDMP"
# As etcd's documentation suggests: far more writes than a server makes between a backup and
# the restore that replaces it.
DEFAULT_BUMP = 1_000_000_000
COUNTER_TABLE = RevisionCounter._meta.db_table


def write_private(path: Path, data: bytes) -> None:
    """Creates `path` 0600 before anything goes in: a backup holds password hashes and tokens'
    digests."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(data)


class BackupError(Exception):
    """What is wrong, said so that the operator can act on it."""


def _settings() -> dict[str, Any]:
    return dict(connection.settings_dict)


def is_sqlite() -> bool:
    return connection.vendor == "sqlite"


def take(destination: Path) -> str:
    """Writes a consistent snapshot of the store to `destination` (0600); what it did."""
    partial = destination.with_name(destination.name + ".partial")
    if is_sqlite():
        write_private(partial, b"")
        source = sqlite3.connect(str(_settings()["NAME"]), timeout=20)
        target = sqlite3.connect(str(partial))
        try:
            source.backup(target)  # all pages in one step: one read transaction
        finally:
            target.close()
            source.close()
    else:
        write_private(partial, b"")
        _pg_tool("pg_dump", "--format=custom", "--no-owner", "--no-privileges", "-f", str(partial))
    os.replace(partial, destination)
    return f"backed up the {connection.vendor} store to {destination}"


def restore(source: Path, bump: int = DEFAULT_BUMP) -> str:
    """Restores `source` into the (empty) configured database; what it did."""
    if not source.is_file():
        raise BackupError(f"{source}: no such backup file")
    with source.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if is_sqlite():
        if not head.startswith(SQLITE_MAGIC):
            raise BackupError(f"{source} is not a SQLite backup (the configured store is SQLite)")
        _restore_sqlite(source, Path(str(_settings()["NAME"])))
    else:
        if not head.startswith(PG_DUMP_MAGIC):
            raise BackupError(
                f"{source} is not a pg_dump archive (the configured store is PostgreSQL)"
            )
        _refuse_non_empty_postgres()
        _pg_tool("pg_restore", "--no-owner", "--no-privileges", "--single-transaction",
                 "--exit-on-error", "--dbname", _settings()["NAME"], str(source))  # fmt: skip
    revision = _bump(bump)
    return f"restored {source}: resource versions continue from {revision}"


def _restore_sqlite(source: Path, target_path: Path) -> None:
    if target_path.exists() and target_path.stat().st_size > 0:
        target = sqlite3.connect(str(target_path), timeout=20)
        try:
            tables = target.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            target.close()
        if tables:
            raise BackupError(_not_empty(f"the database {target_path}", tables))
    backup = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        known = backup.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = ?", (COUNTER_TABLE,)
        ).fetchone()[0]
        if not known:
            raise BackupError(f"{source} is a SQLite database but not a nodus backup")
        if not target_path.exists():
            write_private(target_path, b"")
        target = sqlite3.connect(str(target_path))
        try:
            backup.backup(target)
        finally:
            target.close()
    finally:
        backup.close()


def _refuse_non_empty_postgres() -> None:
    tables = connection.introspection.table_names()
    if tables:
        raise BackupError(_not_empty(f"the database {_settings()['NAME']!r}", len(tables)))


def _not_empty(what: str, tables: int) -> str:
    return (
        f"{what} is not empty (it holds {tables} tables): restore only into an empty one. "
        "Stop the server, then point NODUS_DATA_DIR (or DATABASE_URL) at a new, empty data "
        "directory (or database) and run restore again; nothing was changed."
    )


def _bump(bump: int) -> int:
    """Moves the revision counter past anything handed out since the snapshot and compacts
    everything before it; the revision resource versions now continue from."""
    with transaction.atomic():
        RevisionCounter.objects.filter(pk=1).update(
            value=F("value") + bump, compacted=F("value") + bump + 1
        )
        value = RevisionCounter.objects.values_list("value", flat=True).get(pk=1)
    return int(value)


def _pg_tool(tool: str, *args: str) -> None:
    """Runs pg_dump or pg_restore against the configured database."""
    path = shutil.which(tool)
    if path is None:
        raise BackupError(f"{tool} is not installed: install the PostgreSQL client tools")
    config = _settings()
    env = {**os.environ, "PGPASSWORD": str(config.get("PASSWORD") or "")}
    command = [path, *args]
    if tool == "pg_dump":
        command.append(str(config["NAME"]))
    for flag, key in (("--host", "HOST"), ("--port", "PORT"), ("--username", "USER")):
        if config.get(key):
            command += [flag, str(config[key])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{tool} failed: {done.stderr.strip()[-2000:]}")
