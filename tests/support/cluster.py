"""Several daphne workers on one database, as scale-out runs them, for tests across processes.

`start_cluster` makes a data directory, migrates it and creates the usual actors with the
project's own commands (`liveserver.prepare`), then starts each worker with
`python -m runtimes.api.serving nodus_console.asgi:application` on a free loopback port, all
with the same environment, and waits until each answers `/version`. The workers share the
database: a PostgreSQL `database_url` (with `redis_url` for the cross-process revision nudges
and the channel layer), or, with neither, the SQLite file in the data directory (the hubs then
find other workers' writes on their once-a-second poll of the event log). Every worker is
stopped when the block ends, whatever happened; a worker can be stopped and started again in
between (`Cluster.stop_worker`, `Cluster.start_worker`) on the same database.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support import services
from tests.support.liveserver import REPO, prepare, server_environment
from tests.support.ports import free_port

# How long a worker may take to answer /version (imports, migrations checked, the hub's warm-up
# on first use is later): generous, for a loaded machine.
START_SECONDS = 60.0


GROUP_KEY = "asgi:group:nodus.revisions"  # channels-redis's key for the hubs' group


@contextmanager
def redis_database() -> Iterator[str]:
    """A REDIS_URL with a database number (8 to 15) of its own while the block runs; the
    channel layer's group of nudges is removed before and after.

    A database is claimed with a key in database 0 (`SET NX`, with an expiry in case the
    claimer dies), so two test processes never share one. Picked at random, they did: one
    cluster's clean-up removed the other's channel-layer group, and its worker B stopped
    hearing worker A's nudges (CI: tests/scaleout/test_services_multiworker.py, 7 of 12
    writes seen only on B's next poll of the log).
    """
    services.require_redis()
    import redis

    claims = redis.Redis(host=services.REDIS_HOST, port=services.REDIS_PORT, db=0)
    mine = f"{os.getpid()}-{uuid.uuid4().hex}"
    deadline = time.monotonic() + 120
    db = None
    while db is None:
        for candidate in random.sample(range(8, 16), 8):
            if claims.set(f"nodus-tests:redis-db:{candidate}", mine, nx=True, ex=3600):
                db = candidate
                break
        else:
            if time.monotonic() > deadline:
                raise RuntimeError("no Redis database 8-15 was free for 120 s")
            time.sleep(0.2)
    client = redis.Redis(host=services.REDIS_HOST, port=services.REDIS_PORT, db=db)
    client.delete(GROUP_KEY)  # a crashed run's
    try:
        yield f"redis://{services.REDIS_HOST}:{services.REDIS_PORT}/{db}"
    finally:
        client.delete(GROUP_KEY)
        client.close()
        key = f"nodus-tests:redis-db:{db}"
        if claims.get(key) == mine.encode():
            claims.delete(key)
        claims.close()


def worker_environment(
    data_dir: Path, database_url: str = "", redis_url: str = "", **settings: str
) -> dict[str, str]:
    """`liveserver.server_environment` for a worker of a cluster: the database and Redis given
    (none: SQLite in `data_dir`, in-memory channel layer), quiet logs, and `settings` on top."""
    env = server_environment(data_dir)
    env.pop("REDIS_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(
        NODUS_LOG_LEVEL="WARNING",
    )
    env.update(settings)
    return env


@dataclass
class Cluster:
    """Workers sharing one database (and Redis, if any), and alice's token."""

    data_dir: Path
    env: dict[str, str]
    token: str
    database_url: str
    urls: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes] | None] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def client(self, worker: int, **kw: object) -> httpx.Client:
        return httpx.Client(
            base_url=self.urls[worker],
            headers={"Authorization": f"Bearer {self.token}"},
            **kw,  # type: ignore[arg-type]
        )

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.logs
        )

    def start_worker(self, index: int) -> None:
        """Starts worker `index` (a new one at the end, or one stopped before, on a new port)
        and waits until it answers /version."""
        self._launch(index)
        self._wait(index)

    def _launch(self, index: int) -> None:
        port = free_port()
        log = self.data_dir / f"daphne-{index}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "runtimes.api.serving"),
                    *("-b", "127.0.0.1", "-p", str(port)),
                    "nodus_console.asgi:application",
                ],
                cwd=REPO,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        if index == len(self.urls):
            self.urls.append(url)
            self.processes.append(process)
            self.logs.append(log)
        else:
            assert self.processes[index] is None, f"worker {index} is running"
            self.urls[index], self.processes[index] = url, process

    def _wait(self, index: int) -> None:
        process = self.processes[index]
        assert process is not None
        wait_until_up(self.urls[index], process, self.logs[index])

    def stop_worker(self, index: int) -> None:
        """Terminates worker `index` and waits until it has exited (killed after 10 s)."""
        self._stop([index])

    def _stop(self, indexes: list[int]) -> None:
        stopping = [(i, p) for i in indexes if (p := self.processes[i]) is not None]
        for index, process in stopping:
            self.processes[index] = None
            process.terminate()
        for _index, process in stopping:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_until_up(
    url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = START_SECONDS
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/version", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"daphne at {url} did not answer within {seconds} s:\n{log.read_text()}")


@contextmanager
def start_cluster(
    workers: int = 2,
    database_url: str = "",
    redis_url: str = "",
    prefix: str = "nodus-cluster-",
    **settings: str,
) -> Iterator[Cluster]:
    """`workers` daphne workers on a freshly prepared database, all with the same environment
    (`worker_environment`); stopped when the block ends."""
    data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    env = worker_environment(data_dir, database_url, redis_url, **settings)
    made = Cluster(data_dir, env, "", database_url)
    try:
        made.token = prepare(data_dir, env)["alice"]
        for index in range(workers):
            made._launch(index)  # all at once: they start side by side
        for index in range(workers):
            made._wait(index)
        yield made
    finally:
        made._stop(list(range(len(made.processes))))
        # NODUS_KEEP_LIVE=1 keeps the data directory (and the workers' logs) for a post-mortem.
        if os.environ.get("NODUS_KEEP_LIVE") != "1":
            shutil.rmtree(data_dir, ignore_errors=True)
