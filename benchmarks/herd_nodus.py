"""The herd's nodus: a fresh `manage.py serve --no-seed` as `make run` runs it, and its target.

The server gets its own throwaway data dir (SQLite, in-memory channel layer) with the embedded
controller on. Its images are on registry.nodus.dev, which no allow-list names here (the
allow-list is empty), so the controller judges them without going to the network. Before it
starts, a subprocess on the same data dir makes the admin, the demo project and the tokens: one
per herd member (the server's flow control counts seats per token) and one per writer.

    .venv/bin/python -m benchmarks.herd_nodus MEMBERS WRITERS   # that subprocess
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import orjson

from benchmarks.herd_http import Client
from benchmarks.herd_loads import SEQ, Target, manifest_bytes
from benchmarks.server import free_port, spawn, stop, wait_for_livez

ROOT = Path(__file__).resolve().parent.parent
GV = "/apis/nodus.dev/v1beta1"
RESOURCE_VERSION = b'"resourceVersion":"'
SELECTOR = "labelSelector=" + quote("bench=probe")


def seed(members: int, writers: int) -> None:
    """In a subprocess on the server's data dir: migrations, the admin, the demo project and
    the tokens; prints them as one JSON line."""
    import django

    django.setup()
    from django.core.management import call_command

    from runtimes.accounts.bootstrap import ensure_admin, ensure_demo_project
    from runtimes.accounts.tokens import create_token

    call_command("migrate", interactive=False, verbosity=0)
    admin, _password, _generated = ensure_admin()
    project = ensure_demo_project(admin)
    seeded = {
        "namespace": project.name,
        "members": [create_token(admin, f"herd-{i:04d}")[1] for i in range(members)],
        "writers": [create_token(admin, f"herd-writer-{i:02d}")[1] for i in range(writers)],
    }
    print(orjson.dumps(seeded).decode())


def seeded_by_subprocess(env: dict[str, str], members: int, writers: int) -> dict[str, object]:
    """`seed` run in a subprocess with `env` (the server's database); what it printed."""
    seeding = subprocess.run(
        [sys.executable, "-m", "benchmarks.herd_nodus", str(members), str(writers)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seeded: dict[str, object] = orjson.loads(seeding.stdout.strip().splitlines()[-1])
    return seeded


def environment(data_dir: Path, controller: bool = True) -> dict[str, str]:
    """`make run`'s server: embedded controller on (unless told otherwise); an empty registry
    allow-list."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NODUS_", "DATABASE_URL"))}
    env.pop("REDIS_URL", None)
    env.update(
        NODUS_DATA_DIR=str(data_dir),
        NODUS_EMBEDDED_CONTROLLER="1" if controller else "0",
        NODUS_REGISTRY_ALLOW="",
        NODUS_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="nodus_console.settings",
        PYTHONUNBUFFERED="1",
    )
    return env


@contextmanager
def serving(data_dir: Path, members: int, writers: int, controller: bool = True) -> Iterator[Nodus]:
    """Seeds the data dir, serves it, yields the target; stops the server on the way out."""
    (data_dir / "static").mkdir(exist_ok=True)
    env = environment(data_dir, controller)
    seeded = seeded_by_subprocess(env, members, writers)
    port = free_port()
    log = data_dir / "daphne.log"
    process = spawn(port, free_port(), log, env)
    try:
        wait_for_livez(f"http://127.0.0.1:{port}", process, log)
        target = Nodus("127.0.0.1", port, process.pid, seeded)
        target.server_log = log
        try:
            yield target
        finally:
            target.close()
    finally:
        stop(process, seconds=20)


class Nodus(Target):
    health_path = "/livez"

    def __init__(self, host: str, port: int, pid: int, seeded: dict[str, object]) -> None:
        super().__init__("nodus", host, port, pid)
        namespace, members, writers = seeded["namespace"], seeded["members"], seeded["writers"]
        assert isinstance(namespace, str)
        assert isinstance(members, list)
        assert isinstance(writers, list)
        self.namespace = namespace
        self.collection = f"{GV}/namespaces/{namespace}/trainingruntimes"
        self.tokens: list[str] = members
        self.writers = [Client(host, port, token) for token in writers]

    def member(self, i: int) -> Client:
        return Client(self.host, self.port, self.tokens[i % len(self.tokens)])

    def writer(self, i: int) -> Client:
        return self.writers[i % len(self.writers)]

    @staticmethod
    def _revision(body: bytes) -> int:
        """The first resourceVersion in a body: the object's (metadata precedes spec; the
        padding annotation holds none)."""
        start = body.index(RESOURCE_VERSION) + len(RESOURCE_VERSION)
        return int(body[start : body.index(b'"', start)])

    async def create(self, client: Client, name: str, probe: bool, deadline: float) -> int | None:
        body = manifest_bytes(name, probe, self.size)
        answer = await client.call("POST", self.collection, body, deadline=deadline)
        return self._revision(answer.body) if answer.status == 201 else None

    async def list_all(self, client: Client, deadline: float) -> int:
        answer = await client.call("GET", self.collection, deadline=deadline)
        if answer.status != 200:
            raise RuntimeError(f"list answered {answer.status}: {answer.body[:200]!r}")
        return len(orjson.loads(answer.body)["items"])

    async def probe_list(self, client: Client, deadline: float) -> int:
        path = f"{self.collection}?{SELECTOR}&limit=1"
        answer = await client.call("GET", path, deadline=deadline)
        if answer.status != 200:
            raise RuntimeError(f"list answered {answer.status}: {answer.body[:200]!r}")
        return int(orjson.loads(answer.body)["metadata"]["resourceVersion"])

    def watch_request(self, revision: int, probe_only: bool) -> tuple[str, str, bytes]:
        # The informer's watch: the list's selector, from the list's resourceVersion.
        path = (
            f"{self.collection}?watch=1&resourceVersion={revision}&allowWatchBookmarks=true"
            f"&{SELECTOR}"
        )
        return "GET", path, b""

    async def update_probe(self, client: Client, seq: int, deadline: float) -> int | None:
        patch = orjson.dumps({"metadata": {"annotations": {SEQ: str(seq)}}})
        answer = await client.call(
            "PATCH",
            f"{self.collection}/{self.probe_name}",
            patch,
            content_type="application/merge-patch+json",
            deadline=deadline,
        )
        return self._revision(answer.body) if answer.status == 200 else None

    @staticmethod
    def revisions(line: bytes) -> list[int]:
        head = line[:24]
        if b"BOOKMARK" in head or b"ERROR" in head:
            return []
        start = line.find(RESOURCE_VERSION)
        if start < 0:
            return []
        start += len(RESOURCE_VERSION)
        return [int(line[start : line.index(b'"', start)])]

    @staticmethod
    def refusal(line: bytes) -> str:
        if b'"ERROR"' in line[:24]:
            return line[:300].decode(errors="replace")
        return ""

    def close(self) -> None:
        for client in self.writers:
            client.close()


if __name__ == "__main__":
    seed(int(sys.argv[1]), int(sys.argv[2]))
