"""A live daphne for watch tests that need tight limits (see tests/watch_settings.py), and what
those tests read a watch with.

`start_tight` (behind the `tight_server` fixture in tests/conftest.py) reuses
tests/support/liveserver.py (migrate, actors, tokens, daphne in a subprocess) and only swaps the
settings module, so compaction, bookmarks and server-side watch timeouts happen within seconds
instead of minutes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.support import liveserver

GV = "/apis/nodus.dev/v1beta1"
DEMO = f"{GV}/namespaces/demo/trainingruntimes"


def _environment(data_dir: Path) -> dict[str, str]:
    env = _plain_environment(data_dir)
    env["DJANGO_SETTINGS_MODULE"] = "tests.watch_settings"
    return env


_plain_environment = liveserver.server_environment


def start_tight(data_dir: Path) -> liveserver.LiveServer:
    """`liveserver.start_fresh` under tests.watch_settings."""
    liveserver.server_environment = _environment
    try:
        return liveserver.start_fresh(data_dir)
    finally:
        liveserver.server_environment = _plain_environment


def manifest(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32,
            "task": "SFT",
            "command": ["python", "-m", "trainer"],
            **spec,
        },
    }
    return body


def read_events(
    client: httpx.Client, path: str, count: int | None = None, seconds: float = 10.0, **kw: Any
) -> tuple[httpx.Response, list[dict[str, Any]]]:
    """Opens a watch and reads events until `count` arrived, the stream ends or time is up."""
    import orjson

    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    with client.stream("GET", path, timeout=seconds + 5, **kw) as response:
        if response.status_code != 200:
            response.read()
            return response, events
        for line in response.iter_lines():
            if line:
                events.append(orjson.loads(line))
            if (count is not None and len(events) >= count) or time.monotonic() > deadline:
                break
    return response, events


class Watcher:
    """A watch read on a background thread, so a test can write while it listens."""

    def __init__(self, client: httpx.Client, path: str, **headers: str) -> None:
        import queue
        import threading

        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.status: int | None = None
        self.headers: httpx.Headers | None = None
        self.body = b""
        self._opened = threading.Event()
        self._client = client
        self._path = path
        self._extra = headers
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        if not self._opened.wait(10):
            raise TimeoutError(f"watch {path} did not answer with headers within 10 s")

    def _read(self) -> None:
        import orjson

        try:
            with self._client.stream("GET", self._path, headers=self._extra, timeout=60) as r:
                self._response = r
                self.status, self.headers = r.status_code, r.headers
                self._opened.set()
                if r.status_code != 200:
                    self.body = r.read()
                    return
                for line in r.iter_lines():
                    if line:
                        self.events.put(orjson.loads(line))
        except httpx.HTTPError:
            pass
        finally:
            self._opened.set()
            self.events.put(None)  # the stream ended

    def next(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The next event; None when the stream has ended."""
        return self.events.get(timeout=timeout)

    def take(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        while len(got) < count:
            event = self.next(timeout)
            if event is None:
                break
            got.append(event)
        return got

    def rest(self, timeout: float = 15.0) -> list[dict[str, Any]]:
        """Every event until the server ends the stream."""
        got: list[dict[str, Any]] = []
        while (event := self.next(timeout)) is not None:
            got.append(event)
        return got

    def close(self) -> None:
        if self._response is not None:
            self._response.close()
