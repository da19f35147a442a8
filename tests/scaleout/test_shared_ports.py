"""`manage.py serve --workers 2`: two worker processes behind the same HTTP and HTTPS ports.

On PostgreSQL and Redis, as scale-out runs. The parent migrates, then starts the workers, whose
listening sockets share the ports (SO_REUSEPORT): `ss` shows two listening sockets on each port,
held by two different processes. Twenty watches opened on the one port land on both workers
(the kernel spreads the connections); a runtime created through the same port reaches every one
of them (the other worker learns of it through the log and Redis). SIGTERM to the parent ends
both workers and the parent with 0.
"""

from __future__ import annotations

import re
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest

from tests.support import services
from tests.support.api import runtime_manifest
from tests.support.cluster import redis_database, worker_environment
from tests.support.liveserver import PYTHON, REPO, prepare
from tests.support.ports import free_port

pytestmark = pytest.mark.services

COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"
WATCHES = 20


def _pids(*query: str) -> set[int]:
    shown = subprocess.run(["ss", "-Htnp", *query], capture_output=True, text=True, check=True)
    return {int(pid) for pid in re.findall(r"pid=(\d+)", shown.stdout)}


def listeners(port: int) -> set[int]:
    """The pids holding a listening socket on `port`."""
    return _pids("state", "listening", f"sport = :{port}")


def holders(port: int) -> set[int]:
    """The pids holding connections accepted on `port`."""
    return _pids("state", "established", f"sport = :{port}")


def test_two_workers_answer_behind_one_port_and_see_each_others_writes() -> None:
    with services.temp_database("nodus_ports") as database, redis_database() as redis_url:
        data_dir = Path(tempfile.mkdtemp(prefix="nodus-ports-"))
        (data_dir / "static").mkdir()
        env = worker_environment(data_dir, database, redis_url, NODUS_EMBEDDED_CONTROLLER="0")
        token = prepare(data_dir, env)["alice"]
        port, tls_port = free_port(), free_port()
        log = (data_dir / "serve.log").open("wb")
        parent = subprocess.Popen(
            [
                *(str(PYTHON), str(REPO / "manage.py"), "serve", "--no-seed", "--workers", "2"),
                *("--port", str(port), "--tls-port", str(tls_port)),
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 120
            while len(listeners(port)) < 2 or len(listeners(tls_port)) < 2:
                assert parent.poll() is None, (data_dir / "serve.log").read_text()[-3000:]
                assert time.monotonic() < deadline, (data_dir / "serve.log").read_text()[-3000:]
                time.sleep(0.2)
            workers = listeners(port)
            assert len(workers) == 2
            assert listeners(tls_port) == workers
            assert parent.pid not in workers

            headers = {"Authorization": f"Bearer {token}"}
            url = f"http://127.0.0.1:{port}"
            with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
                revision = client.get(COLLECTION).json()["metadata"]["resourceVersion"]
            got: list[str] = []
            opened = threading.Barrier(WATCHES + 1)

            def watch() -> None:
                params = {"watch": "1", "resourceVersion": revision, "timeoutSeconds": "60"}
                with (
                    httpx.Client(base_url=url, headers=headers, timeout=60) as client,
                    client.stream("GET", COLLECTION, params=params) as stream,
                ):
                    opened.wait(30)
                    for line in stream.iter_lines():
                        if line:
                            got.append(orjson.loads(line)["object"]["metadata"]["name"])
                            return

            threads = [threading.Thread(target=watch, daemon=True) for _ in range(WATCHES)]
            for thread in threads:
                thread.start()
            opened.wait(30)
            serving_watches = holders(port)
            assert serving_watches == workers  # the kernel gave connections to both
            with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
                made = client.post(COLLECTION, json=runtime_manifest("across-workers"))
                assert made.status_code == 201, made.text
            for thread in threads:
                thread.join(30)
            assert got == ["across-workers"] * WATCHES
        finally:
            parent.send_signal(signal.SIGTERM)
            try:
                code = parent.wait(30)
            except subprocess.TimeoutExpired:
                parent.kill()
                raise
            log.close()
        assert code == 0, (data_dir / "serve.log").read_text()[-3000:]
        assert not listeners(port)
