"""Settings come from the environment: database URLs, Redis, the data dir and its secret key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nodus_console.settings import _database

ROOT = Path(__file__).resolve().parents[2]

PRINT_SETTINGS = """
import json
from django.conf import settings
print(json.dumps({
    "data_dir": str(settings.DATA_DIR),
    "db": settings.DATABASES["default"]["ENGINE"],
    "db_name": settings.DATABASES["default"]["NAME"],
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "hosts": settings.CHANNEL_LAYERS["default"].get("CONFIG", {}).get("hosts"),
    "secret": settings.SECRET_KEY,
    "controller": settings.NODUS_EMBEDDED_CONTROLLER,
}))
"""


def settings_under(env: dict[str, str]) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("NODUS_", "DATABASE_URL"))}
    clean.pop("REDIS_URL", None)
    clean.pop("DJANGO_SECRET_KEY", None)
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()\n" + PRINT_SETTINGS],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "nodus_console.settings", **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_it_parses_sqlite_urls_as_absolute_or_relative() -> None:
    assert _database("sqlite:////var/lib/nodus/db.sqlite3")["NAME"] == "/var/lib/nodus/db.sqlite3"
    assert _database("sqlite:///rel/db.sqlite3")["NAME"] == "rel/db.sqlite3"
    assert _database("sqlite://")["ENGINE"] == "django.db.backends.sqlite3"


def test_it_parses_postgres_urls_with_credentials_and_options() -> None:
    db = _database(
        "postgres://nodus:p%40ss@db.internal:6543/console?conn_max_age=60&sslmode=require"
    )
    assert (db["ENGINE"], db["NAME"], db["USER"], db["PASSWORD"]) == (
        "django.db.backends.postgresql",
        "console",
        "nodus",
        "p@ss",
    )
    assert (db["HOST"], db["PORT"], db["CONN_MAX_AGE"]) == ("db.internal", "6543", 60)
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_it_pools_postgres_connections_unless_told_otherwise() -> None:
    pooled = _database("postgres://postgres@127.0.0.1:5432/nodus")
    assert pooled["OPTIONS"]["pool"]["max_size"] == 16
    assert _database("postgres://h/db?pool_max_size=4")["OPTIONS"]["pool"]["max_size"] == 4
    assert "pool" not in _database("postgres://h/db?pool_max_size=0")["OPTIONS"]
    assert "pool" not in _database("postgres://h/db?conn_max_age=60")["OPTIONS"]


def test_it_refuses_an_unknown_database_scheme() -> None:
    with pytest.raises(ValueError, match="mysql"):
        _database("mysql://root@localhost/nodus")


def test_it_defaults_to_sqlite_and_memory_in_the_data_dir(tmp_path: Path) -> None:
    first = settings_under({"NODUS_DATA_DIR": str(tmp_path)})
    assert first["data_dir"] == str(tmp_path)
    assert first["db"] == "django.db.backends.sqlite3"
    assert first["db_name"] == str(tmp_path / "nodus.sqlite3")
    assert first["layer"] == "channels.layers.InMemoryChannelLayer"
    assert first["controller"] is True
    # The generated secret key is kept beside the data, private, and reused on restart.
    key_file = tmp_path / "secret-key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert settings_under({"NODUS_DATA_DIR": str(tmp_path)})["secret"] == first["secret"]


def test_it_scales_out_with_postgres_and_redis_from_the_environment(tmp_path: Path) -> None:
    scaled = settings_under(
        {
            "NODUS_DATA_DIR": str(tmp_path),
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/nodus",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "NODUS_EMBEDDED_CONTROLLER": "0",
            "DJANGO_SECRET_KEY": "from-the-environment",
        }
    )
    assert scaled["db"] == "django.db.backends.postgresql"
    assert scaled["db_name"] == "nodus"
    assert scaled["layer"] == "channels_redis.core.RedisChannelLayer"
    # Reads may outlast channels-redis's 5 s blocking receive (redis-py 8 gives up at 5 s).
    assert scaled["hosts"] == [
        {"address": "redis://127.0.0.1:6379/0", "socket_timeout": 15, "socket_connect_timeout": 5}
    ]
    assert scaled["controller"] is False
    assert scaled["secret"] == "from-the-environment"
    assert not (tmp_path / "secret-key").exists()
