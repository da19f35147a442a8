"""One controller leader at a time: file locks, PostgreSQL advisory locks, real processes."""

from __future__ import annotations

import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtimes.controller.leader import FileLock, PostgresAdvisoryLock, lead, postgres_params
from tests.support import services

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN = {"host": "127.0.0.1", "port": 5432, "user": "postgres", "dbname": "postgres"}


def test_a_file_lock_admits_one_holder_until_released(tmp_path: Path) -> None:
    first, second = FileLock(tmp_path / "lock"), FileLock(tmp_path / "lock")

    assert first.try_acquire()
    assert not second.try_acquire()
    first.release()
    assert second.try_acquire()
    assert second.still_held()


def test_a_file_lock_is_freed_when_its_process_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from runtimes.controller.leader import FileLock; "
            f"lock = FileLock({str(tmp_path / 'lock')!r}); assert lock.try_acquire(); "
            "print('held', flush=True); "
            "time.sleep(60)",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        lock = FileLock(tmp_path / "lock")
        assert not lock.try_acquire()
    finally:
        holder.kill()
        holder.wait()

    assert lock.try_acquire()


def test_lead_works_only_while_holding_the_lock_and_stops_on_request(tmp_path: Path) -> None:
    other = FileLock(tmp_path / "lock")
    assert other.try_acquire()
    stop = threading.Event()
    states: list[bool] = []
    worked = threading.Event()

    def work(resign: threading.Event) -> None:
        worked.set()
        resign.wait()

    thread = threading.Thread(
        target=lead,
        args=(FileLock(tmp_path / "lock"), work, stop),
        kwargs={"retry_seconds": 0.05, "on_change": states.append},
    )
    thread.start()
    time.sleep(0.3)
    assert not worked.is_set()  # someone else leads

    other.release()
    assert worked.wait(2)
    stop.set()
    thread.join(3)

    assert not thread.is_alive()
    assert states == [True, False]
    assert other.try_acquire()  # released on the way out


def test_it_builds_psycopg_parameters_from_django_settings() -> None:
    params = postgres_params(
        {
            "NAME": "nodus",
            "USER": "app",
            "PASSWORD": "",
            "HOST": "db",
            "PORT": "5433",
            "OPTIONS": {"sslmode": "require", "pool": True},
        }
    )
    assert params["dbname"] == "nodus"
    assert params["sslmode"] == "require"
    assert "pool" not in params
    assert "password" not in params


# -- PostgreSQL --------------------------------------------------------------------------------


def _psycopg() -> object:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(**PG_ADMIN, connect_timeout=2).close()
    except psycopg.Error:
        pytest.skip("needs PostgreSQL on 127.0.0.1:5432")
    return psycopg


@pytest.mark.services
def test_an_advisory_lock_has_one_holder_and_frees_when_its_session_ends() -> None:
    psycopg = _psycopg()
    key = secrets.randbits(62)
    first = PostgresAdvisoryLock(PG_ADMIN, key)
    second = PostgresAdvisoryLock(PG_ADMIN, key)
    try:
        assert first.try_acquire()
        assert not second.try_acquire()
        pid = first._connection.info.backend_pid
        with psycopg.connect(**PG_ADMIN, autocommit=True) as admin:  # type: ignore[attr-defined]
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))  # the leader's host dies

        assert not first.still_held()
        assert second.try_acquire()
    finally:
        first.release()
        second.release()


@pytest.fixture(scope="module")
def postgres_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database of this module's own; yields its DATABASE_URL."""
    with services.temp_database("nodus_leader") as url:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            env=_env(url, tmp_path_factory.mktemp("migrate")),
            check=True,
            timeout=120,
        )
        yield url


def _env(database_url: str, data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "NODUS_DATA_DIR": str(data_dir),
        "NODUS_EMBEDDED_CONTROLLER": "0",
        "PYTHONUNBUFFERED": "1",
    }


class Controller:
    """A ``manage.py runcontroller`` process whose stdout lines we can wait for."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runcontroller"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def saw(self, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                self.seen.append(self.lines.get(timeout=remaining))
            except queue.Empty:
                return False
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.mark.services
def test_two_controllers_elect_one_leader_and_the_second_takes_over(
    postgres_database: str, tmp_path: Path
) -> None:
    env = _env(postgres_database, tmp_path)
    first = Controller(env)
    second = Controller(env)
    try:
        assert first.saw("controller: leading", 30) or second.saw("controller: leading", 5)
        leader, standby = (
            (first, second) if "controller: leading" in first.seen else (second, first)
        )
        assert standby.saw("controller: waiting for the leader lock", 10)
        assert not standby.saw("controller: leading", 3)  # exactly one leader

        leader.process.kill()
        killed = time.monotonic()
        assert standby.saw("controller: leading", 10)
        takeover = time.monotonic() - killed
        print(f"\nstandby took over {takeover:.2f} s after the leader was killed")
        assert takeover < 5

        standby.process.send_signal(signal.SIGTERM)
        assert standby.process.wait(10) == 0  # a clean stop: lock released, threads joined
        assert standby.saw("controller: stopped", 2)
    finally:
        first.stop()
        second.stop()


@pytest.mark.services
def test_a_controller_process_verifies_the_seeded_catalog_on_postgres(
    postgres_database: str, tmp_path: Path
) -> None:
    import psycopg

    env = _env(postgres_database, tmp_path)
    subprocess.run(
        [sys.executable, "manage.py", "seed", "--no-examples"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
    )
    controller = Controller(env)
    dbname = postgres_database.rsplit("/", 1)[1]
    try:
        deadline = time.monotonic() + 30
        phases: list[str] = []
        while time.monotonic() < deadline:
            with psycopg.connect(**{**PG_ADMIN, "dbname": dbname}) as db:
                phases = [
                    row[0]
                    for row in db.execute(
                        "SELECT body::jsonb #>> '{status,phase}' FROM runtimes_storedobject "
                        "WHERE resource = 'trainingruntimes.nodus.dev'"
                    )
                ]
            if phases and set(phases) == {"Ready"}:
                break
            time.sleep(0.2)
        assert len(phases) == 13
        assert set(phases) == {"Ready"}
    finally:
        controller.stop()
