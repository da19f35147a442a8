"""The scale benchmark's servers: a seeded nodus per database, and the bare fan-out baseline.

Each nodus runs as users run it (`manage.py serve`, daphne, one process): on SQLite it is the
embedded default; on PostgreSQL it has REDIS_URL too, as a scale-out worker. The embedded
controller is off, as in the other benchmarks: its registry lookups are not what is measured.
"""

from __future__ import annotations

import shutil
import socket
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from benchmarks import server
from benchmarks.server import free_port

ROOT = Path(__file__).resolve().parent.parent
PG = ("127.0.0.1", 5432, "postgres")
REDIS = ("127.0.0.1", 6379)
REDIS_DB = 12  # nudges only say "re-read the log": sharing a db would cost wake-ups, not data


@dataclass
class Target:
    """A running, seeded server and how to read its event log's commit times."""

    name: str
    url: str
    token: str
    namespace: str
    pid: int
    seeded: dict[str, object]
    database_url: str  # sqlite:///path or postgres://...

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=60,
            **kw,  # type: ignore[arg-type]
        )

    def committed_at(self, revisions: list[int]) -> dict[int, float]:
        """Event.created_at (set in the transaction, just before commit) as epoch seconds."""
        wanted = sorted(revisions)
        if self.database_url.startswith("sqlite"):
            with sqlite3.connect(self.database_url.removeprefix("sqlite:///")) as conn:
                marks = ",".join("?" * len(wanted))
                sql = f"SELECT revision, created_at FROM runtimes_event WHERE revision IN ({marks})"
                rows = conn.execute(sql, wanted).fetchall()
            return {int(r): _epoch(str(t)) for r, t in rows}
        import psycopg

        url = self.database_url.replace("postgres://", "postgresql://", 1)
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT revision, EXTRACT(EPOCH FROM created_at) FROM runtimes_event "
                "WHERE revision = ANY(%s)",
                (wanted,),
            ).fetchall()
        return {int(r): float(t) for r, t in rows}


def _epoch(text: str) -> float:
    """A datetime as Django keeps it in SQLite (UTC text, without a zone) in epoch seconds."""
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def listening(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB: now and its peak."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


@contextmanager
def _database(kind: str, data_dir: Path) -> Iterator[tuple[str, str]]:
    """(DATABASE_URL, REDIS_URL) for a fresh database of `kind`; dropped afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{data_dir / 'nodus.sqlite3'}", ""
        return
    import psycopg

    host, port, user = PG
    name = f"nodus_bench_{uuid.uuid4().hex[:10]}"
    admin = f"host={host} port={port} user={user} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{user}@{host}:{port}/{name}", f"redis://{REDIS[0]}:{REDIS[1]}/{REDIS_DB}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def seeded_server(kind: str, count: int, namespace: str = "scale") -> Iterator[Target]:
    data_dir = Path(tempfile.mkdtemp(prefix=f"nodus-scale-{kind}-"))
    try:
        with _database(kind, data_dir) as (database_url, redis_url):
            # 1,000 watchers per process and more: no bound on open watches for the benchmark.
            env = server.environment(
                data_dir,
                database_url=database_url,
                redis_url=redis_url,
                NODUS_MAX_WATCHES_INFLIGHT="0",
            )
            if kind == "postgres-pool":
                env["DJANGO_SETTINGS_MODULE"] = "benchmarks.pool_settings"
            made = server.seeded("benchmarks.scale_seed", [count, namespace], env, seconds=600)
            log = data_dir / "daphne.log"
            try:
                with server.serving(env, log) as served:
                    yield Target(
                        kind, served.url, str(made["token"]), namespace, served.pid, made,
                        database_url,
                    )  # fmt: skip
            finally:
                # The log outlives the data dir, for a look at any failed request.
                shutil.copy(log, Path(tempfile.gettempdir()) / f"nodus-scale-{kind}-daphne.log")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def fanout_server() -> Iterator[tuple[str, int]]:
    """The bare broadcast app under daphne: (url, pid)."""
    port = free_port()
    log = Path(tempfile.mkdtemp(prefix="nodus-fanout-")) / "daphne.log"
    command = [sys.executable, "-m", "daphne", "-b", server.HOST, "-p", str(port)]
    process = server.launch([*command, "benchmarks.fanout:application"], None, log)
    url = f"http://{server.HOST}:{port}"
    try:
        server.wait_up(url, process, log)
        yield url, process.pid
    finally:
        server.terminate(process)
        shutil.rmtree(log.parent, ignore_errors=True)
