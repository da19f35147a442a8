"""The herd's nodus: a fresh `manage.py serve --no-seed` as `make run` runs it, and its target.

The server gets its own throwaway data dir (SQLite, in-memory channel layer) with the embedded
controller on. Its images are on registry.nodus.dev, which no allow-list names here (the
allow-list is empty), so the controller judges them without going to the network. Before it
starts, a subprocess on the same data dir makes the admin, the demo project and the tokens: one
per herd member (the server's flow control counts seats per token) and one per writer.

    .venv/bin/python -m benchmarks.herd_nodus MEMBERS WRITERS   # that subprocess
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import orjson

from benchmarks import server
from benchmarks.herd_http import Client
from benchmarks.herd_loads import SEQ, Target, manifest_bytes
from benchmarks.server import seeded

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
    made: dict[str, object] = seeded("benchmarks.herd_nodus", [members, writers], env)
    return made


def environment(data_dir: Path, controller: bool = True) -> dict[str, str]:
    """`make run`'s server: embedded controller on (unless told otherwise); an empty registry
    allow-list."""
    return server.environment(data_dir, controller=controller, NODUS_REGISTRY_ALLOW="")


@contextmanager
def serving(data_dir: Path, members: int, writers: int, controller: bool = True) -> Iterator[Nodus]:
    """Seeds the data dir, serves it, yields the target; stops the server on the way out."""
    env = environment(data_dir, controller)
    made = seeded_by_subprocess(env, members, writers)
    with server.serving(env, data_dir / "daphne.log", stop_seconds=20) as served:
        target = Nodus(server.HOST, served.port, served.pid, made)
        target.server_log = served.log
        try:
            yield target
        finally:
            target.close()


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
