"""What the server leaves on disk: a private data dir, private secrets, tokens only as digests.

`manage.py serve` runs as `make run` does (migrate, first-run admin, seed with its signing key,
TLS certificate, daphne on both listeners), under the everyday umask 022, so nothing here
relies on a strict umask: the data dir is 0700, and the database (with its -wal and -shm), the
secret key, the admin password and the TLS and signing keys are 0600. A data dir that an older
version left readable is narrowed at the next start.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.liveserver import PYTHON, REPO, server_environment
from tests.support.ports import free_port

PRIVATE_FILES = (
    "secret-key",
    "admin-password",
    "nodus.sqlite3",
    "nodus.sqlite3-wal",
    "nodus.sqlite3-shm",
    "tls/tls.key",
    "keys/cosign.key",
)
PRIVATE_DIRS = (".", "tls", "keys")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes(data_dir: Path) -> dict[str, str]:
    return {name: oct(mode(data_dir / name)) for name in (*PRIVATE_DIRS, *PRIVATE_FILES)}


EXPECTED = {
    **{name: oct(0o700) for name in PRIVATE_DIRS},
    **{name: oct(0o600) for name in PRIVATE_FILES},
}


class Serve:
    """`manage.py serve` on `data_dir`, from start until /livez answers, then stopped."""

    def __init__(self, data_dir: Path, log_path: Path) -> None:
        port, tls_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self.process = subprocess.Popen(
            [
                *(str(PYTHON), str(REPO / "manage.py"), "serve", "--host", "127.0.0.1"),
                *("--port", str(port), "--tls-port", str(tls_port)),
            ],
            cwd=REPO,
            # No NODUS_ADMIN_PASSWORD: the admin's password is generated and kept in the data dir.
            env=server_environment(data_dir),
            stdout=log_path.open("ab"),
            stderr=subprocess.STDOUT,
            umask=0o022,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited:\n{log_path.read_text(errors='replace')}")
            try:
                if httpx.get(f"{self.url}/livez", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"serve did not answer:\n{log_path.read_text(errors='replace')}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serve, Path]]:
    # The data dir's parent is made world-readable, as a home directory often is.
    parent = tmp_path_factory.mktemp("modes")
    parent.chmod(0o755)
    data_dir = parent / "data"
    server = Serve(data_dir, parent / "serve.log")
    try:
        yield server, data_dir
    finally:
        server.stop()


def test_it_creates_the_data_dir_0700_and_its_secrets_0600(served: tuple[Serve, Path]) -> None:
    server, data_dir = served
    httpx.get(f"{server.url}/version")  # a request, so the database has been opened and written
    assert modes(data_dir) == EXPECTED


def test_it_stores_tokens_only_as_digests(served: tuple[Serve, Path]) -> None:
    server, data_dir = served
    made = subprocess.run(
        [str(PYTHON), str(REPO / "manage.py"), "createtoken", "--user", "admin", "--name", "disk"],
        cwd=REPO,
        env=server_environment(data_dir),
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    token = made.stdout.strip()
    assert token.startswith("nodus_")
    used = httpx.get(f"{server.url}/apis", headers={"Authorization": f"Bearer {token}"})
    assert used.status_code == 200
    stored = b"".join(
        (data_dir / name).read_bytes()
        for name in ("nodus.sqlite3", "nodus.sqlite3-wal")
        if (data_dir / name).exists()
    )
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored
    assert token.encode() not in stored
    assert token[12:].encode() not in stored  # past the prefix the list shows
    assert token not in server.log_path.read_text(errors="replace")


def test_it_narrows_a_loose_data_dir_at_start_up(
    served: tuple[Serve, Path], tmp_path: Path
) -> None:
    server, data_dir = served
    server.stop()
    # As an older version (or a copy without -p) leaves it: everything readable by all.
    for name in (*PRIVATE_DIRS, *PRIVATE_FILES):
        path = data_dir / name
        if path.exists():
            path.chmod(0o755 if path.is_dir() else 0o644)
    again = Serve(data_dir, tmp_path / "serve-again.log")
    try:
        httpx.get(f"{again.url}/version")
        assert modes(data_dir) == EXPECTED
    finally:
        again.stop()


def test_it_writes_a_new_secret_0600_before_its_first_byte(tmp_path: Path) -> None:
    from runtimes.accounts.privatefiles import write_private

    path = tmp_path / "secret"
    previous = os.umask(0)  # even a wide-open umask gives no window
    try:
        write_private(path, b"one")
    finally:
        os.umask(previous)
    assert mode(path) == 0o600
    path.chmod(0o644)
    write_private(path, b"two")
    assert (mode(path), path.read_bytes()) == (0o600, b"two")
