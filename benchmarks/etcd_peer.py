"""The herd's peer baseline: a real etcd (Debian's etcd-server, 3.4) spoken to over its v3 JSON
gateway, the store kube-apiserver keeps its objects in.

`running()` installs the package when /usr/bin/etcd is missing (apt-get; skipped, with the
reason, when that fails), starts one member on free loopback ports with a throwaway data dir,
waits for /health, and on the way out stops it and deletes the dir. `Etcd` is the herd's
target over the gateway: `POST /v3/kv/put`, `/v3/kv/range` and a streaming `/v3/watch`, keys and
values base64, under kube's key layout (/registry/<group>/<resource>/<namespace>/<name>).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson

from benchmarks.herd_http import Client
from benchmarks.herd_loads import Target, manifest_bytes
from benchmarks.server import free_port, terminate

ETCD = Path("/usr/bin/etcd")
PACKAGE = "etcd-server"
MOD_REVISION = b'"mod_revision":"'


class Unavailable(Exception):
    """No etcd to compare with (not installed and not installable, or it would not start)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _prefix_end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


def version() -> str:
    out = subprocess.run([str(ETCD), "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.splitlines()[0].removeprefix("etcd Version: ") if out.stdout else "?"


def ensure_installed(log: Path) -> None:
    """apt-get installs etcd-server when /usr/bin/etcd is missing (once with the package lists as
    they are, once after an update); raises Unavailable with the reason if it stays missing."""
    if ETCD.exists():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    attempts = (
        [["apt-get", "install", "-y", "--no-install-recommends", PACKAGE]],
        [["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", PACKAGE]],
    )
    for steps in attempts:
        with log.open("ab") as out:
            for step in steps:
                try:
                    done = subprocess.run(
                        step, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600
                    )
                except (OSError, subprocess.TimeoutExpired) as error:
                    raise Unavailable(f"{' '.join(step)}: {error}") from error
                if done.returncode != 0:
                    break
        if ETCD.exists():
            return
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
    raise Unavailable(f"apt-get install {PACKAGE} failed ({' '.join(tail)[:200]}); see {log}")


@contextmanager
def running(work: Path) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """One etcd member on loopback: yields (host, client port, process); stops it and deletes
    its data on the way out."""
    ensure_installed(work / "apt.log")
    data_dir = Path(tempfile.mkdtemp(prefix="etcd-", dir=work))
    client, peer = free_port(), free_port()
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    log = work / "etcd.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                *(str(ETCD), "--name", "herd", "--data-dir", str(data_dir)),
                *("--listen-client-urls", client_url, "--advertise-client-urls", client_url),
                *("--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url),
                *("--initial-cluster", f"herd={peer_url}", "--initial-cluster-state", "new"),
                *("--logger", "zap", "--log-level", "warn"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_health(client_url, process, log)
        yield "127.0.0.1", client, process
    finally:
        terminate(process)
        shutil.rmtree(data_dir, ignore_errors=True)


def _wait_for_health(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise Unavailable(f"etcd exited ({process.returncode}): {log.read_text()[-500:]}")
        try:
            answer = httpx.get(f"{url}/health", timeout=2)
            if answer.status_code == 200 and answer.json().get("health") == "true":
                return
        except (httpx.TransportError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise Unavailable(f"etcd did not report healthy within 60 s: see {log}")
        time.sleep(0.1)


class Etcd(Target):
    """The same loads as kube-apiserver would make them of its store: one key per object."""

    health_path = "/health"

    def __init__(self, host: str, port: int, pid: int, namespace: str, writers: int) -> None:
        super().__init__(f"etcd {version()}", host, port, pid)
        self.prefix = f"/registry/nodus.dev/trainingruntimes/{namespace}/".encode()
        self.writers = [Client(host, port) for _ in range(writers)]

    def key(self, name: str) -> bytes:
        return self.prefix + name.encode()

    def member(self, _i: int) -> Client:
        return Client(self.host, self.port)

    def writer(self, i: int) -> Client:
        return self.writers[i % len(self.writers)]

    async def _put(self, client: Client, name: str, value: bytes, deadline: float) -> int | None:
        body = orjson.dumps({"key": _b64(self.key(name)), "value": _b64(value)})
        answer = await client.call("POST", "/v3/kv/put", body, deadline=deadline)
        if answer.status != 200:
            return None
        return int(orjson.loads(answer.body)["header"]["revision"])

    async def create(self, client: Client, name: str, probe: bool, deadline: float) -> int | None:
        return await self._put(client, name, manifest_bytes(name, probe, self.size), deadline)

    async def _range(self, client: Client, limit: int, deadline: float) -> dict[str, object]:
        request: dict[str, object] = {
            "key": _b64(self.prefix),
            "range_end": _b64(_prefix_end(self.prefix)),
        }
        if limit:
            request["limit"] = limit
        answer = await client.call(
            "POST", "/v3/kv/range", orjson.dumps(request), deadline=deadline, idempotent=True
        )
        if answer.status != 200:
            raise RuntimeError(f"range answered {answer.status}: {answer.body[:200]!r}")
        result: dict[str, object] = orjson.loads(answer.body)
        return result

    async def list_all(self, client: Client, deadline: float) -> int:
        kvs = (await self._range(client, 0, deadline)).get("kvs") or []
        assert isinstance(kvs, list)
        return len(kvs)

    async def probe_list(self, client: Client, deadline: float) -> int:
        header = (await self._range(client, 1, deadline))["header"]
        assert isinstance(header, dict)
        return int(header["revision"])

    def watch_request(self, revision: int, probe_only: bool) -> tuple[str, str, bytes]:
        if probe_only:  # the one key a label selector would pick
            key, end = self.key(self.probe_name), b""
        else:
            key, end = self.prefix, _prefix_end(self.prefix)
        create: dict[str, object] = {"key": _b64(key), "start_revision": revision + 1}
        if end:
            create["range_end"] = _b64(end)
        return "POST", "/v3/watch", orjson.dumps({"create_request": create})

    async def update_probe(self, client: Client, seq: int, deadline: float) -> int | None:
        value = manifest_bytes(self.probe_name, True, self.size, seq=seq)
        return await self._put(client, self.probe_name, value, deadline)

    @staticmethod
    def revisions(line: bytes) -> list[int]:
        """Every event's mod_revision in one watch response (a response may carry several)."""
        found, start = [], line.find(MOD_REVISION)
        while start >= 0:
            start += len(MOD_REVISION)
            end = line.index(b'"', start)
            found.append(int(line[start:end]))
            start = line.find(MOD_REVISION, end)
        return found

    @staticmethod
    def refusal(line: bytes) -> str:
        if line.startswith(b'{"error"') or b'"canceled":true' in line[:400]:
            return line[:300].decode(errors="replace")
        return ""

    def close(self) -> None:
        for client in self.writers:
            client.close()
