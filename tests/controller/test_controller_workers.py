"""The loop every controller worker runs (runtime, job and garbage-collector workers alike)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from runtimes.controller.workers import run_worker
from runtimes.controller.workqueue import WorkQueue


class Rests(threading.Event):
    """A stop event that records each rest the worker's pacer asks of it."""

    def __init__(self) -> None:
        super().__init__()
        self.rests: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is not None:
            self.rests.append(timeout)
        return super().wait(0)


def start(queue: WorkQueue[str], handle: Any, stopping: threading.Event, **kw: Any) -> Any:
    kept: list[bool] = []
    thread = threading.Thread(
        target=run_worker,
        args=(queue, handle),
        kwargs={
            "share": kw.pop("share", 1.0),
            "stopping": stopping,
            "keep": lambda failed: kept.append(failed),
            "describe": lambda key: f"item {key}",
            **kw,
        },
        daemon=True,
    )
    thread.start()
    return thread, kept


def finish(queue: WorkQueue[str], thread: threading.Thread) -> None:
    queue.shut_down()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_it_hands_each_key_to_the_handler_and_says_when_the_queue_drained() -> None:
    queue: WorkQueue[str] = WorkQueue()
    seen: list[str] = []
    handled = threading.Event()
    idle = threading.Event()

    def handle(key: str) -> None:
        seen.append(key)
        if len(seen) == 2:
            handled.set()

    queue.add("a")
    queue.add("b")
    thread, kept = start(queue, handle, threading.Event(), idle=idle)
    assert handled.wait(10)
    assert idle.wait(10)
    finish(queue, thread)
    assert seen == ["a", "b"]
    assert kept == [False, False]
    assert queue.quiet()


def test_a_failing_key_is_logged_and_comes_back_after_a_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue: WorkQueue[str] = WorkQueue(backoff_base=0.01, backoff_max=0.01)
    calls: list[str] = []
    again = threading.Event()

    def handle(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("registry on fire")
        again.set()

    queue.add("a")
    with caplog.at_level(logging.ERROR, logger="nodus.controller"):
        thread, kept = start(queue, handle, threading.Event())
        assert again.wait(10)
        finish(queue, thread)
    assert calls == ["a", "a"]
    assert kept == [False, True]  # the connection is refreshed as failed after an error
    [record] = [r for r in caplog.records if "item a failed; retrying in" in r.getMessage()]
    assert record.exc_info is not None


def test_a_worker_rests_in_proportion_to_the_cpu_a_key_used() -> None:
    queue: WorkQueue[str] = WorkQueue()
    done = threading.Event()

    def burn(key: str) -> None:
        total = 0
        for n in range(200_000):
            total += n * n
        done.set()

    stopping = Rests()
    queue.add("a")
    thread, _kept = start(queue, burn, stopping, share=0.5)
    assert done.wait(10)
    finish(queue, thread)
    assert stopping.rests  # paced: it rested after the work
    assert stopping.rests[0] > 0


def test_a_full_share_never_rests() -> None:
    queue: WorkQueue[str] = WorkQueue()
    done = threading.Event()
    stopping = Rests()
    queue.add("a")
    thread, _kept = start(queue, lambda key: done.set(), stopping, share=1.0)
    assert done.wait(10)
    finish(queue, thread)
    assert stopping.rests == []
