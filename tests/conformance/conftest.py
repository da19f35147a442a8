"""Transports for the conformance sequences: the Django test client, and a live daphne."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import yaml

from tests.conformance.harness import Answer, Step, Watch
from tests.support.api import ApiClient
from tests.support.liveserver import LiveServer
from tests.support.watch_live import Watcher


def _decode(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if content_type.startswith("application/json"):
        return orjson.loads(raw)
    if content_type.startswith("application/yaml"):
        return yaml.safe_load(raw)
    return None


def _encode(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


class InProcess:
    """Each step through the Django test client, as the step's actor."""

    def __init__(self, api: Callable[[str | None], ApiClient]) -> None:
        self.api = api

    def send(self, step: Step, path: str, body: Any) -> Answer:
        client = self.api(None if step.who == "anonymous" else step.who)
        response = client.client.generic(
            step.method,
            path,
            data=_encode(body),
            content_type=step.content_type,
            headers={**client.headers, **step.headers},
        )
        raw = b"" if response.streaming else response.content
        headers = {k.lower(): v for k, v in response.items()}
        return Answer(
            response.status_code, headers, _decode(raw, headers.get("content-type", "")), raw
        )

    def open_watch(self, watch: Watch, path: str) -> Any:
        raise AssertionError("watch sequences run against a live server (test_watch_live.py)")


class _LiveWatch(Watcher):
    def body_json(self) -> Any:
        """The body of a refused watch (read on the watcher's thread, so wait for it)."""
        self._thread.join(10)
        return _decode(self.body, (self.headers or {}).get("content-type", ""))


class Live:
    """Each step over HTTP to a live daphne, as the step's actor; watches on threads."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.clients = {who: server.client(who) for who in server.tokens}
        self.clients["anonymous"] = server.client(None)

    def send(self, step: Step, path: str, body: Any) -> Answer:
        response = self.clients[step.who].request(
            step.method,
            path,
            content=_encode(body),
            headers={"Content-Type": step.content_type, **step.headers},
        )
        headers = {k.lower(): v for k, v in response.headers.items()}
        raw = response.content
        return Answer(
            response.status_code, headers, _decode(raw, headers.get("content-type", "")), raw
        )

    def open_watch(self, watch: Watch, path: str) -> Any:
        return _LiveWatch(self.clients[watch.who], path, **watch.headers)

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


@pytest.fixture
def in_process(api: Callable[[str | None], ApiClient]) -> InProcess:
    return InProcess(api)


_unique = itertools.count(1)


@pytest.fixture
def unique() -> str:
    """A suffix that keeps names apart on a live server shared by a module's sequences."""
    return f"u{next(_unique)}"
