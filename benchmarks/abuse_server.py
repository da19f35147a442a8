"""The abuse benchmark's server: `manage.py serve --no-seed` in a throwaway data dir, restartable.

Accounts and objects are made by `benchmarks.abuse_setup` in a subprocess before the first
start. An attack may kill the server (the probe's RSS cap) or stop it (SIGTERM): `ensure_up`
starts it again on the same data dir and ports, so the rows after it still measure something.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks import server as launcher

HOST = launcher.HOST
GV = "/apis/nodus.dev/v1beta1"


def livez_answers(server: AbuseServer, seconds: float = 1.0) -> bool:
    try:
        return httpx.get(f"{server.url}/livez", timeout=seconds).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class AbuseServer:
    data_dir: Path
    controller: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    tls_port: int = 0
    process: subprocess.Popen[bytes] | None = None
    accounts: dict[str, Any] = field(default_factory=dict)
    starts: int = 0

    @classmethod
    def fresh(cls, controller: bool = False, runtimes: int = 0, **setup: Any) -> AbuseServer:
        data_dir = Path(tempfile.mkdtemp(prefix="nodus-abuse-"))
        server = cls(data_dir, controller, dict(setup.pop("env", {})))
        server.prepare(runtimes, **setup)
        return server

    @property
    def env(self) -> dict[str, str]:
        return launcher.environment(self.data_dir, controller=self.controller, **self.extra_env)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log(self) -> Path:
        return self.data_dir / "daphne.log"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def namespace(self) -> str:
        return str(self.accounts["namespace"])

    def user(self, name: str) -> dict[str, Any]:
        return dict(self.accounts["users"][name])

    def token(self, name: str) -> str:
        return str(self.accounts["users"][name]["token"])

    def prepare(self, runtimes: int, image: str = "") -> None:
        args: list[object] = ["--runtimes", runtimes] + (["--image", image] if image else [])
        self.accounts = launcher.seeded("benchmarks.abuse_setup", args, self.env, seconds=600)

    def start(self) -> None:
        served = launcher.spawn(self.env, self.log, port=self.port, tls_port=self.tls_port)
        self.port, self.tls_port, self.process = served.port, served.tls_port, served.process
        self.starts += 1
        launcher.wait_up(self.url, self.process, self.log, seconds=90)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ensure_up(self) -> bool:
        """Starts the server again if an attack ended it; True if it had to."""
        if self.alive():
            return False
        self.start()
        return True

    def terminate(self, seconds: float) -> float | None:
        """SIGTERM, then the seconds until the process exited; None (and SIGKILL) past `seconds`."""
        assert self.process is not None
        return launcher.terminate(self.process, seconds)

    def kill(self) -> None:
        if self.process is not None and self.alive():
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            self.terminate(10)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def client(self, user: str = "admin", timeout: float = 30) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token(user)}"} if user else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def collection(self, plural: str = "trainingruntimes") -> str:
        return f"{GV}/namespaces/{self.namespace}/{plural}"
