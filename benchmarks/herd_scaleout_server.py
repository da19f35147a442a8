"""herd-scaleout's server: `manage.py serve --no-seed --workers N` on a fresh PostgreSQL database
and a Redis database of its own, behind one shared HTTP port (SO_REUSEPORT).

Before the server starts, the herd's seeding subprocess (`python -m benchmarks.herd_nodus`, run
here with DATABASE_URL set) migrates the new database and makes the admin, the demo project and
the tokens. The workers are the pids `ss` shows listening on the port. Whatever happens, the
block's end stops the parent (SIGTERM, which it passes on to the workers), kills whatever of
them is still there, drops the database, clears the Redis keys it made and removes the data dir
(the server's log is kept as $TMPDIR/nodus-herd-scaleout-serve.log, and `logged` reads its
warnings).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import herd_nodus, server

ROOT = Path(__file__).resolve().parent.parent
PG = ("127.0.0.1", 5432, "postgres")
REDIS = ("127.0.0.1", 6379)
# The tests take Redis databases 8-15 (tests/support/cluster.py), the scale case 12: an empty one
# of 1-7 here, so that no other run's nudges wake these workers.
REDIS_DBS = range(1, 8)
START_SECONDS = 120.0
# The server's log outlives its data dir, for a look afterwards (and for `logged`).
KEPT_LOG = Path(tempfile.gettempdir()) / "nodus-herd-scaleout-serve.log"
LOG_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) (WARNING|ERROR|CRITICAL) (\S+) (.*)$"
)


@dataclass
class Cluster:
    """The running server: its parent, the workers behind the port, what the seeding made."""

    port: int
    parent: subprocess.Popen[bytes]
    workers: list[int]
    seeded: dict[str, object]
    log: Path
    versions: dict[str, str] = field(default_factory=dict)  # postgres, redis


def logged(path: Path = KEPT_LOG) -> list[tuple[float, str]]:
    """The warnings and errors the server logged: (epoch, "LEVEL logger: message")."""
    found = []
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        if match := LOG_LINE.match(line):
            stamp, millis, level, logger, message = match.groups()
            at = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000
            found.append((at, f"{level} {logger}: {message[:160]}"))
    return found


def _pids(*query: str) -> list[int]:
    shown = subprocess.run(["ss", "-Htnp", *query], capture_output=True, text=True, check=True)
    return [int(pid) for pid in re.findall(r"pid=(\d+)", shown.stdout)]


def listeners(port: int) -> list[int]:
    """The pids holding a listening socket on `port` (`ss -Hltnp state listening sport = :PORT`)."""
    return sorted(set(_pids("-l", "state", "listening", f"sport = :{port}")))


def accepted(port: int) -> dict[int, int]:
    """Connections accepted on `port`: the client's port -> the pid of the worker holding it."""
    shown = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"sport = :{port}"],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.findall(r":\d+\s+\S+:(\d+)\s+users:\(\(\"[^\"]*\",pid=(\d+)", shown.stdout)
    return {int(peer): int(pid) for peer, pid in found}


def connections(held: dict[int, int]) -> dict[int, int]:
    """How many of `accepted`'s connections each worker holds: how the kernel spread them."""
    count: dict[int, int] = {}
    for pid in held.values():
        count[pid] = count.get(pid, 0) + 1
    return count


@contextmanager
def postgres_database() -> Iterator[tuple[str, str]]:
    """A fresh database: (DATABASE_URL, the server's version); dropped, connections and all."""
    import psycopg

    host, port, user = PG
    name = f"nodus_scaleout_{uuid.uuid4().hex[:10]}"
    admin = f"host={host} port={port} user={user} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        version = str(conn.execute("SHOW server_version").fetchone()[0]).split()[0]  # type: ignore[index]
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{user}@{host}:{port}/{name}", version
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def redis_database() -> Iterator[tuple[str, str]]:
    """(REDIS_URL of an empty database no one else uses, Redis's version); the keys the run made
    there are deleted afterwards."""
    import redis

    host, port = REDIS
    for db in random.sample(list(REDIS_DBS), len(REDIS_DBS)):
        client = redis.Redis(host=host, port=port, db=db)
        if client.dbsize() == 0:
            break
        client.close()
    else:
        raise RuntimeError(f"no empty Redis database among {REDIS_DBS.start}-{REDIS_DBS.stop - 1}")
    version = str(client.info("server").get("redis_version", "?"))
    try:
        yield f"redis://{host}:{port}/{db}", version
    finally:
        with contextlib.suppress(redis.RedisError):
            keys = list(client.scan_iter(count=1000))
            if keys:
                client.delete(*keys)
        client.close()


def environment(
    data_dir: Path, database_url: str, redis_url: str, watches_per_worker: int
) -> dict[str, str]:
    """A scale-out worker's: PostgreSQL, Redis, the embedded controller off, quiet logs."""
    env = server.environment(data_dir, database_url=database_url, redis_url=redis_url)
    if watches_per_worker != 1000:  # the server's default (runtimes.api.flowcontrol)
        env["NODUS_MAX_WATCHES_INFLIGHT"] = str(watches_per_worker)
    return env


def _wait_for_workers(port: int, tls_port: int, cluster: Cluster, count: int) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        workers = listeners(port)
        if len(workers) >= count and len(listeners(tls_port)) >= count:
            cluster.workers = workers
            return
        if cluster.parent.poll() is not None:
            raise RuntimeError(f"serve exited: {cluster.log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{len(workers)} of {count} workers listening after {START_SECONDS:.0f} s: "
                f"{cluster.log.read_text()[-3000:]}"
            )
        time.sleep(0.2)


def _is_worker(pid: int) -> bool:
    """Whether `pid` is still one of this server's workers (not a pid reused since)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"serve" in command and b"--worker" in command


def _stop(cluster: Cluster) -> None:
    server.terminate(cluster.parent, 40)
    deadline = time.monotonic() + 10
    for pid in cluster.workers:
        while _is_worker(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _is_worker(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextmanager
def serving(
    workers: int, members: int, writers: int, watches_per_worker: int, log: Callable[[str], None]
) -> Iterator[Cluster]:
    """A seeded `manage.py serve --no-seed --workers N` on fresh PostgreSQL and Redis."""
    data_dir = Path(tempfile.mkdtemp(prefix="nodus-scaleout-"))
    KEPT_LOG.unlink(missing_ok=True)
    try:
        with postgres_database() as (database_url, pg), redis_database() as (redis_url, rd):
            env = environment(data_dir, database_url, redis_url, watches_per_worker)
            log(f"seeding {database_url.rsplit('/', 1)[1]} ({members} tokens); Redis {redis_url}")
            seeded = herd_nodus.seeded_by_subprocess(env, members, writers)
            serve_log = data_dir / "serve.log"
            served = server.spawn(env, serve_log, workers=workers)
            port, tls_port, parent = served.port, served.tls_port, served.process
            cluster = Cluster(port, parent, [], seeded, serve_log, {"postgres": pg, "redis": rd})
            try:
                server.wait_up(served.url, parent, serve_log, START_SECONDS)
                _wait_for_workers(port, tls_port, cluster, workers)
                log(f"{workers} workers on port {port}: pids {cluster.workers}")
                yield cluster
            finally:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    cluster.workers = sorted(set(cluster.workers) | set(listeners(port)))
                _stop(cluster)
                shutil.copy(serve_log, KEPT_LOG)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
