"""`nodus_console.asgi.Handler`: an API request is answered without a thread started for it;
a console page keeps Django's thread per request, which its sync views need."""

from __future__ import annotations

import asyncio
import gc
import threading
import tracemalloc
from typing import Any

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from channels.testing import HttpCommunicator

from nodus_console import asgi
from nodus_console.asgi import application
from runtimes.accounts.tokens import create_token
from runtimes.registry.kinds import TRAINING_RUNTIMES
from runtimes.storage import store
from tests.support.api import GV, runtime_manifest

RUNTIMES = f"{GV}/namespaces/demo/trainingruntimes"


async def _get(path: str, token: str = "") -> dict[str, Any]:
    headers = [(b"host", b"testserver")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    response: dict[str, Any] = await HttpCommunicator(
        application, "GET", path, headers=headers
    ).get_response(timeout=10)
    return response


def _thread_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads started from now on."""
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    return started


async def test_an_api_request_starts_no_thread_of_its_own(
    actors: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = (await sync_to_async(create_token)(actors["alice"], "test"))[1]
    for _ in range(5):  # the pool's thread, asgiref's, the hub's: started once, then kept
        assert (await _get(RUNTIMES, token))["status"] == 200
    started = _thread_starts(monkeypatch)
    for _ in range(10):
        assert (await _get(RUNTIMES, token))["status"] == 200
    # Eight at once need eight of the pool's threads: they were all started with the first.
    answers = await asyncio.gather(*(_get(RUNTIMES, token) for _ in range(8)))
    assert [answer["status"] for answer in answers] == [200] * 8
    assert started == []


async def test_an_api_request_waits_for_no_thread_but_its_views(
    actors: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither the request signals nor closing the answer go to asgiref's thread: each was a
    hand-over to it and back, for receivers that look after that thread, which an API request
    does not use."""
    token = (await sync_to_async(create_token)(actors["alice"], "test"))[1]
    assert (await _get(RUNTIMES, token))["status"] == 200
    handed: list[object] = []
    executor = SyncToAsync.single_thread_executor
    submit = executor.submit

    def counted(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        handed.append(fn)
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(executor, "submit", counted)
    for path in (RUNTIMES, f"{RUNTIMES}/missing", "/livez"):
        assert (await _get(path, token))["status"] in {200, 404}
    assert handed == []
    assert (await _get("/readyz", token))["status"] == 200  # its database check: that thread
    assert handed


async def test_a_sync_api_view_has_its_threads_connection_checked_around_it(
    actors: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request signals checked the connection of the thread a sync view runs on; an API
    request sends none, so the few sync API views (namespaces here) check it themselves."""
    token = (await sync_to_async(create_token)(actors["alice"], "test"))[1]
    checked: list[str] = []
    check = asgi.close_old_connections

    def counted() -> None:
        checked.append(threading.current_thread().name)
        check()

    monkeypatch.setattr(asgi, "close_old_connections", counted)
    assert (await _get("/api/v1/namespaces", token))["status"] == 200
    assert len(checked) == 2
    assert threading.main_thread().name not in checked  # on the view's thread, not the loop's
    checked.clear()
    assert (await _get(RUNTIMES, token))["status"] == 200  # the pool checks its own
    assert checked == []


async def test_a_console_page_still_runs_in_djangos_thread_per_request(
    actors: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await _get("/login"))["status"] == 200
    started = _thread_starts(monkeypatch)
    assert (await _get("/login"))["status"] == 200
    assert started  # the request's own thread (ThreadSensitiveContext), and its joiner


def _big_runtimes(count: int, bytes_each: int) -> None:
    for i in range(count):
        manifest = runtime_manifest(f"big-{i}")
        manifest["metadata"]["annotations"] = {"note": "x" * bytes_each}
        store.create(TRAINING_RUNTIMES, "demo", manifest)


async def test_a_big_answer_leaves_no_copy_of_its_body_behind(actors: dict[str, Any]) -> None:
    # The responses of a request sit in reference cycles (DRF's response, request and view),
    # which only the collector frees; with the collector off, whatever is still held once the
    # answer is out stays held. The body must not be among it: at 10,000 objects it is 50 MB.
    token = (await sync_to_async(create_token)(actors["alice"], "test"))[1]
    await sync_to_async(_big_runtimes)(40, 100_000)
    assert (await _get(RUNTIMES, token))["status"] == 200  # caches and pools warmed up
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        answer = await _get(RUNTIMES, token)
        size = len(answer["body"])
        del answer
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert size > 4_000_000
    assert held < size / 2, f"{held:,} bytes still held after a {size:,}-byte answer"
