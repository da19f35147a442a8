"""`manage.py serve --workers 2` under write load: kill -9 of one worker loses no acknowledged
write, the server keeps serving, and the worker is replaced; SIGTERM then drains every worker.

On one SQLite file, as the embedded default runs, and on PostgreSQL and Redis, as scale-out
does. How fast the replacement listens is measured and printed (run with `-s`), not asserted:
the machine may be loaded.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.scaleout.test_shared_ports import listeners
from tests.support import services
from tests.support.api import runtime_manifest
from tests.support.cluster import redis_database
from tests.support.liveserver import prepare, serve_command, server_environment

COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


class Load:
    """A client creating runtimes one after another, and a /livez poller, beside the test."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.acknowledged: list[tuple[float, str]] = []  # (when, name) of each 201
        self.failed: list[float] = []
        self.livez: list[tuple[float, bool]] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._write, daemon=True),
            threading.Thread(target=self._poll, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def _write(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        number = 0
        while not self.stop.is_set():
            number += 1
            name = f"load-{number}"
            try:
                # A fresh connection each time, so the kernel spreads them over the workers.
                answer = httpx.post(
                    self.url + COLLECTION, json=runtime_manifest(name), headers=headers, timeout=30
                )
            except httpx.TransportError:  # a connection the dead worker held: not acknowledged
                self.failed.append(time.monotonic())
                continue
            if answer.status_code == 201:
                self.acknowledged.append((time.monotonic(), name))
            else:
                self.failed.append(time.monotonic())

    def _poll(self) -> None:
        while not self.stop.is_set():
            try:
                ok = httpx.get(self.url + "/livez", timeout=5).status_code == 200
            except httpx.TransportError:
                ok = False
            self.livez.append((time.monotonic(), ok))
            time.sleep(0.05)

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)])
def services_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """Nothing (one SQLite file, no Redis), or PostgreSQL and Redis as scale-out runs."""
    if request.param == "sqlite":
        yield {}
        return
    with services.temp_database("nodus_workers") as database, redis_database() as redis_url:
        yield {"DATABASE_URL": database, "REDIS_URL": redis_url}


def test_killing_a_worker_under_write_load_loses_no_acknowledged_write(
    tmp_path: Path, services_env: dict[str, str]
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    token = prepare(data, {**server_environment(data), **services_env})["alice"]
    with serve_command(data, WORKERS="2", **services_env) as (parent, port):
        wait_for(lambda: len(listeners(port)) == 2, 120)
        workers = listeners(port)
        url = f"http://127.0.0.1:{port}"
        load = Load(url, token)
        try:
            wait_for(lambda: len(load.acknowledged) >= 5, 60)
            victim = min(workers)
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            wait_for(lambda: len(listeners(port) - {victim}) == 2, 60)
            replaced_in = time.monotonic() - killed_at
            replacement = (listeners(port) - workers).pop()
            # Load goes on a moment with the new worker in the pool.
            settled = len(load.acknowledged)
            wait_for(lambda: len(load.acknowledged) >= settled + 5, 60)
        finally:
            load.finish()
        log = (data / "serve.log").read_text()
        print(f"\nworker {victim} killed: {replacement} listening instead in {replaced_in:.2f} s")
        assert parent.poll() is None, log[-3000:]
        assert f"worker {victim} exited with -9" in log
        # The server served throughout: each client lost at most the one request the victim
        # held (a fresh connection each time), and went on being answered.
        assert len(load.failed) <= 1, load.failed
        assert sum(not ok for _, ok in load.livez) <= 1
        assert any(killed_at < when and ok for when, ok in load.livez)
        # No acknowledged write is lost.
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            listed = client.get(COLLECTION).json()["items"]
        stored = {item["metadata"]["name"] for item in listed}
        assert {name for _, name in load.acknowledged} <= stored
        # SIGTERM drains every worker (the replacement too) and the parent exits cleanly.
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(30) == 0, (data / "serve.log").read_text()[-3000:]
        assert not listeners(port)


def test_workers_drain_and_exit_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    prepare(data)
    with serve_command(data, WORKERS="2") as (parent, port):
        wait_for(lambda: len(listeners(port)) == 2, 120)
        parent.kill()
        parent.wait(10)
        # Not left serving unsupervised: every worker drains and exits.
        wait_for(lambda: not listeners(port), 60)
        log = (data / "serve.log").read_text()
    assert log.count(f"the supervisor {parent.pid} is gone") >= 2, log[-3000:]
