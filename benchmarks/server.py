"""The benchmarks' one server launcher: `manage.py serve --no-seed` in a throwaway data dir.

Every case that measures nodus starts it here, as users run it (daphne, one process, or
`--workers N` for scale-out), with `environment`'s settings: the developer's own NODUS_* and
database variables are dropped, so a case measures only what it states. Accounts and objects
are made before the server starts, by a seeding module run in a subprocess on the same database
(`seeded`), or in this process for `run.py`'s own server (`live_server`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
START_SECONDS = 60.0


def environment(
    data_dir: Path,
    *,
    controller: bool = False,
    database_url: str = "",
    redis_url: str = "",
    **settings: str,
) -> dict[str, str]:
    """The server's environment: `data_dir` (SQLite unless `database_url`), the in-memory channel
    layer unless `redis_url`, the embedded controller only if asked, quiet logs; then `settings`
    (NODUS_* names) on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODUS_")}
    for name in ("DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY"):
        env.pop(name, None)
    env.update(
        NODUS_DATA_DIR=str(data_dir),
        NODUS_EMBEDDED_CONTROLLER="1" if controller else "0",
        NODUS_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="nodus_console.settings",
        PYTHONUNBUFFERED="1",
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    if redis_url:
        env["REDIS_URL"] = redis_url
    env.update(settings)
    (data_dir / "static").mkdir(parents=True, exist_ok=True)  # WhiteNoise warns without it
    return env


def seeded(module: str, args: Sequence[object], env: dict[str, str], seconds: float = 900) -> Any:
    """`python -m module args` on the server's database (`env`); the JSON of its last line."""
    done = subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=seconds,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed:\n{done.stderr[-3000:]}")
    return orjson.loads(done.stdout.strip().splitlines()[-1])


@dataclass
class Served:
    """A started `manage.py serve`: its process (the parent, with `--workers`), ports and log."""

    process: subprocess.Popen[bytes]
    port: int
    tls_port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid


def launch(
    command: Sequence[str], env: dict[str, str] | None, log: Path
) -> subprocess.Popen[bytes]:
    """`command` from the repository's root, its output appended to `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(
            list(command), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )


def spawn(
    env: dict[str, str], log: Path, *, port: int = 0, tls_port: int = 0, workers: int = 0
) -> Served:
    """`manage.py serve --no-seed` on loopback ports (free ones unless given)."""
    port, tls_port = port or free_port(), tls_port or free_port()
    command = [sys.executable, "manage.py", "serve", "--no-seed", "--host", HOST]
    command += ["--port", str(port), "--tls-port", str(tls_port)]
    if workers:
        command += ["--workers", str(workers)]
    return Served(launch(command, env, log), port, tls_port, log)


def wait_up(
    url: str,
    process: subprocess.Popen[bytes],
    log: Path,
    seconds: float = START_SECONDS,
    path: str = "/livez",
) -> None:
    """Returns once `url + path` answers 200; raises if the process exits or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: see {log}\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(url + path, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer {path} within {seconds:.0f} s: see {log}")
        time.sleep(0.1)


def terminate(process: subprocess.Popen[bytes], seconds: float = 15) -> float | None:
    """SIGTERM, then the seconds until it exited; None (after SIGKILL) past `seconds`."""
    if process.poll() is not None:
        return 0.0
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        return None
    return time.perf_counter() - started


@contextmanager
def serving(
    env: dict[str, str], log: Path, *, seconds: float = START_SECONDS, stop_seconds: float = 15
) -> Iterator[Served]:
    """A `manage.py serve --no-seed` answering /livez for the block; stopped after it."""
    served = spawn(env, log)
    try:
        wait_up(served.url, served.process, log, seconds)
        yield served
    finally:
        terminate(served.process, stop_seconds)


@dataclass
class LiveServer:
    url: str
    token: str
    namespace: str
    log: Path
    pid: int

    def cpu_seconds(self) -> float:
        """The server process's CPU time so far (user and system, from /proc)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )


def prepare_database() -> tuple[str, str]:
    """Migrates, makes the admin, its project and a token; returns (token, namespace)."""
    from django.core.management import call_command

    from runtimes.accounts.bootstrap import ensure_admin, ensure_demo_project
    from runtimes.accounts.tokens import create_token

    call_command("migrate", interactive=False, verbosity=0)
    admin, _password, _generated = ensure_admin()
    project = ensure_demo_project(admin)
    return create_token(admin, "bench")[1], project.name


@contextmanager
def live_server(data_dir: Path) -> Iterator[LiveServer]:
    """`run.py`'s server: the database prepared in this process (NODUS_DATA_DIR is `data_dir`),
    with the NODUS_* settings this process was given (`NODUS_FLOW_SEATS=4 benchmarks/run.py
    fairness` measures that setting)."""
    token, namespace = prepare_database()
    given = {k: v for k, v in os.environ.items() if k.startswith("NODUS_")}
    env = environment(data_dir)
    env.update(given)
    with serving(env, data_dir / "daphne.log", stop_seconds=10) as served:
        yield LiveServer(served.url, token, namespace, served.log, served.pid)
