"""A live daphne for the benchmarks: `manage.py serve` on a free loopback port, SQLite, no seed.

The admin, the demo project and a bearer token are made in this process first (the same
database file), so requests authenticate the way kubectl's do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class LiveServer:
    url: str
    token: str
    namespace: str
    log: Path

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


def spawn(port: int, tls_port: int, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`manage.py serve --no-seed` on loopback ports, its output in `log`; the pid is daphne's."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                *(sys.executable, "manage.py", "serve", "--no-seed", "--host", "127.0.0.1"),
                *("--port", str(port), "--tls-port", str(tls_port)),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for_livez(
    url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = 60
) -> None:
    """Returns once `url`/livez answers 200; raises if the process exits or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited: see {log}\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/livez", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"daphne did not answer /livez within {seconds:.0f} s: see {log}")
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes], seconds: float = 10) -> None:
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=seconds)


@contextmanager
def live_server(data_dir: Path) -> Iterator[LiveServer]:
    token, namespace = prepare_database()
    port = free_port()
    log = data_dir / "daphne.log"
    process = spawn(port, free_port(), log, os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_livez(url, process, log)
        yield LiveServer(url, token, namespace, log)
    finally:
        stop(process)
