"""A real daphne server in a subprocess, against its own fresh data directory.

It listens twice: plain HTTP for HTTP-level tests, and HTTPS (a throwaway self-signed
certificate) for kubectl, because client-go sends bearer tokens only over TLS (kubectl issue
#744): against an `http://` server kubectl is always anonymous.

`serve` (behind the `daphne_server` fixture in tests/conftest.py) migrates a temporary
NODUS_DATA_DIR, creates the usual actors with the project's own management commands (alice admin
of `demo`, bob viewer, charlie outsider, root platform admin; one API token each), seeds the
accelerator catalog, starts `python -m runtimes.api.serving nodus_console.asgi:application`
(daphne's command line with the listeners' limits and deadlines that `manage.py serve` uses) on a
free loopback port, waits until `/version` answers and yields a `LiveServer`. The server is
stopped when the fixture's scope ends; its log is kept in the data directory for failing tests to
read. A test process migrates and creates the actors once per environment, and every later data
directory is a copy of that one (`prepare`); every server of a test process serves one collect of
the static files (`collected_static`).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"
ACTORS = ("alice", "bob", "charlie", "root")

# Runs inside `manage.py shell`, so users, project and tokens come from the real commands.
_SETUP = """
import io, json
from django.core.management import call_command
for name in ("alice", "bob", "charlie"):
    call_command("createuser", name, password=name + "-pass")
call_command("createuser", "root", password="root-pass", staff=True)
call_command("createproject", "demo", admin=["alice"], viewer=["bob"])
call_command("seed", no_examples=True)
tokens = {}
for name in ("alice", "bob", "charlie", "root"):
    out = io.StringIO()
    call_command("createtoken", user=name, name="live", stdout=out)
    tokens[name] = out.getvalue().strip()
print("TOKENS=" + json.dumps(tokens))
"""


@dataclass
class LiveServer:
    url: str
    https_url: str
    ca_pem: bytes
    tokens: dict[str, str]
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@functools.cache
def collected_static() -> Path:
    """The static files collected once per test process, as `manage.py serve` collects them
    (hashed names, gzip copies), into a folder every live server of this process serves."""
    folder = Path(tempfile.mkdtemp(prefix="nodus-static-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NODUS_", "DATABASE_URL"))}
    env.update(
        NODUS_DATA_DIR=str(folder / "data"),
        NODUS_STATIC_ROOT=str(folder / "static"),
        DJANGO_SETTINGS_MODULE="nodus_console.settings",
    )
    collect = "from nodus_console.staticfiles import collect; collect()"
    subprocess.run(
        [str(PYTHON), str(REPO / "manage.py"), "shell", "-c", collect],
        cwd=REPO,
        env=env,
        check=True,
        timeout=300,
    )
    return folder / "static"


def server_environment(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NODUS_", "DATABASE_URL"))}
    env.update(
        NODUS_DATA_DIR=str(data_dir),
        NODUS_STATIC_ROOT=str(collected_static()),
        NODUS_EMBEDDED_CONTROLLER="0",
        DJANGO_SETTINGS_MODULE="nodus_console.settings",
        PYTHONUNBUFFERED="1",
    )
    return env


def prepare(data_dir: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """Migrates and creates the actors; returns each actor's API token.

    The first data directory a test process prepares for an environment is kept aside, and
    later ones are copies of it (the same migrations, actors and tokens, in about 10 ms
    instead of 8-12 s of `migrate` and `shell`): a copy is a fresh database of its own."""
    env = env or server_environment(data_dir)
    key = tuple(sorted((k, v) for k, v in env.items() if k not in _PER_DIRECTORY))
    prepared = _PREPARED.get(key)
    if prepared is None:
        folder = Path(tempfile.mkdtemp(prefix="nodus-prepared-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        prepared = _PREPARED[key] = (
            folder,
            _prepare(folder, {**env, "NODUS_DATA_DIR": str(folder)}),
        )
    folder, tokens = prepared
    shutil.copytree(folder, data_dir, dirs_exist_ok=True)
    return dict(tokens)


# What differs between two preparations of the same environment: the directory, and the test.
_PER_DIRECTORY = {"NODUS_DATA_DIR", "PYTEST_CURRENT_TEST"}
_PREPARED: dict[tuple[tuple[str, str], ...], tuple[Path, dict[str, str]]] = {}


def _prepare(data_dir: Path, env: dict[str, str]) -> dict[str, str]:
    manage = [str(PYTHON), str(REPO / "manage.py")]
    subprocess.run(
        [*manage, "migrate", "--verbosity=0"], cwd=REPO, env=env, check=True, timeout=120
    )
    done = subprocess.run(
        [*manage, "shell", "-c", _SETUP],
        cwd=REPO,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("TOKENS="))
    tokens: dict[str, str] = json.loads(line.removeprefix("TOKENS="))
    return tokens


def self_signed_certificate(folder: Path) -> tuple[Path, Path, bytes]:
    """The server's own certificate (see runtimes.accounts.tls); returns (key, cert, cert PEM)."""
    from runtimes.accounts.tls import ensure_certificate

    key_path, cert_path = ensure_certificate(folder, days=1)
    return key_path, cert_path, cert_path.read_bytes()


def start(data_dir: Path, tokens: dict[str, str], **env: str) -> LiveServer:
    """daphne on `data_dir`, with `env` (settings such as NODUS_...) on top of the usual.

    A port that another process took between our probe and daphne's bind makes daphne exit;
    it is started again on new ports (three tries in all; the last one's failure is raised)."""
    for _retry in range(2):
        try:
            return _start_once(data_dir, tokens, env)
        except _PortTaken:
            continue
    return _start_once(data_dir, tokens, env)


class _PortTaken(RuntimeError):
    pass


def _start_once(data_dir: Path, tokens: dict[str, str], env: dict[str, str]) -> LiveServer:
    port, tls_port = free_port(), free_port()
    key, cert, pem = self_signed_certificate(data_dir)
    log_path = data_dir / "daphne.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [
            str(PYTHON),
            "-m",
            "runtimes.api.serving",
            *("-b", "127.0.0.1", "-p", str(port)),
            *("-e", f"ssl:{tls_port}:interface=127.0.0.1:privateKey={key}:certKey={cert}"),
            "nodus_console.asgi:application",
        ],
        cwd=REPO,
        env={**server_environment(data_dir), **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    server = LiveServer(
        f"http://127.0.0.1:{port}",
        f"https://127.0.0.1:{tls_port}",
        pem,
        tokens,
        data_dir,
        log_path,
        process,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            failure = _PortTaken if "Address already in use" in server.log() else RuntimeError
            raise failure(f"daphne exited with {process.returncode}:\n{server.log()}")
        try:
            if httpx.get(f"{server.url}/version", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    stop(server)
    raise RuntimeError(f"daphne did not answer /version within 30 s:\n{server.log()}")


def stop(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


def start_fresh(data_dir: Path) -> LiveServer:
    """Migrates `data_dir`, creates the actors and starts daphne on it."""
    return start(data_dir, prepare(data_dir))


def serve(prefix: str, begin: Callable[[Path], LiveServer] = start_fresh) -> Iterator[LiveServer]:
    """A server on a new temporary data directory, for a fixture to ``yield from``."""
    data_dir = Path(tempfile.mkdtemp(prefix=prefix))
    server = begin(data_dir)
    try:
        yield server
    finally:
        stop(server)
        # NODUS_KEEP_LIVE=1 keeps the data directory (and daphne.log) for a post-mortem.
        if os.environ.get("NODUS_KEEP_LIVE") != "1":
            shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def serve_command(data_dir: Path, **env: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`manage.py serve --no-seed` on a prepared `data_dir`, as an operator runs it, with `env`
    set on top of `server_environment`; yields the process and its HTTP port once /livez
    answers. Its output goes to `data_dir`/serve.log; it is killed if still running at the end.
    """
    environment = server_environment(data_dir)
    environment.update({"NODUS_LOG_LEVEL": "INFO", **env})
    port = free_port()
    log = (data_dir / "serve.log").open("ab")
    process = subprocess.Popen(
        [
            *(str(PYTHON), str(REPO / "manage.py"), "serve", "--no-seed"),
            *("--port", str(port), "--tls-port", str(free_port())),
        ],
        cwd=REPO,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 180  # migrate, admin, certificate: slow on a busy machine
        while True:
            assert process.poll() is None, (data_dir / "serve.log").read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/livez", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve did not come up within 180 s"
            time.sleep(0.1)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        log.close()
