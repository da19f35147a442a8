"""Files only the server's own user may read: the data dir, keys, passwords and the database.

Each is created with its final mode (``mkdir``/``os.open`` with the mode), never written first
and narrowed after, so there is no moment when another local user could open it. Files that an
older version left readable are narrowed when the part that owns them starts (``tighten``).

Pure standard library: ``nodus_console.settings`` uses it before Django is set up.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# SQLite's companions of a database file. SQLite creates them with the database file's own
# mode, so a database created 0600 keeps its log and shared memory 0600 too.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def private_dir(path: Path) -> Path:
    """Creates `path` (and missing parents) 0700, or narrows it to 0700 if it exists."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    path.chmod(DIR_MODE)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Writes `data` to `path`, a file that is 0600 before its first byte goes in."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    with os.fdopen(descriptor, "wb") as handle:
        # O_CREAT's mode applies only to a new file: an existing one is narrowed here.
        os.fchmod(handle.fileno(), FILE_MODE)
        handle.write(data)


def tighten(*paths: Path) -> None:
    """Narrows each existing path: directories to 0700, files to 0600; missing ones are skipped."""
    for path in paths:
        if path.is_symlink() or not path.exists():
            continue
        path.chmod(DIR_MODE if path.is_dir() else FILE_MODE)


def private_database(path: Path) -> None:
    """Makes the SQLite file at `path` 0600 before SQLite opens it, and narrows its companions.

    An empty file is a valid empty SQLite database, so creating it first only fixes its mode.
    """
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
    tighten(path, *(path.with_name(path.name + suffix) for suffix in SQLITE_COMPANIONS))
