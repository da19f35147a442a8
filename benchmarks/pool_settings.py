"""The project's settings with psycopg's connection pool on PostgreSQL (the scale benchmark).

Without it every request opens a PostgreSQL connection of its own (CONN_MAX_AGE=0, which
Django advises under ASGI, where each request runs on a thread of its own): a server process
forked per request, and "too many clients" once enough requests are in flight. The pool needs
the psycopg-pool package; the `postgres-pool` backend of `benchmarks/run.py scale` runs with
this module to show what it changes.
"""

from nodus_console.settings import *  # noqa: F403
from nodus_console.settings import DATABASES

DATABASES["default"]["OPTIONS"] = {
    **DATABASES["default"].get("OPTIONS", {}),  # type: ignore[dict-item]
    "pool": {"min_size": 4, "max_size": 16, "timeout": 30},
}
