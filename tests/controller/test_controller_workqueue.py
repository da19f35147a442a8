"""The controller's work queue: dedupe, requeue while held, delays and exponential backoff."""

from __future__ import annotations

import threading
import time

from runtimes.controller.workqueue import WorkQueue


def test_it_hands_out_a_key_once_however_often_it_was_added() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a"):
        queue.add(key)

    assert [queue.get(0), queue.get(0), queue.get(0)] == ["a", "b", None]


def test_it_requeues_a_key_added_while_a_worker_holds_it_only_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    held = queue.get(0)
    queue.add("a")  # a change arrives while "a" is being reconciled

    assert queue.get(0) is None  # never worked on twice at once
    queue.done(held or "")
    assert queue.get(0) == "a"


def test_it_delays_keys_and_keeps_only_the_earliest_delay_per_key() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("late", 0.3)
    queue.add_after("soon", 0.1)
    queue.add_after("late", 5.0)  # later than the entry already there: ignored

    assert len(queue) == 2
    assert queue.get(0) is None
    start = time.monotonic()
    assert queue.get(1) == "soon"
    assert queue.get(1) == "late"
    assert 0.25 <= time.monotonic() - start < 1.0


def test_it_doubles_the_backoff_up_to_the_cap_and_forgets_on_success() -> None:
    queue: WorkQueue[str] = WorkQueue(backoff_base=0.5, backoff_max=4.0)

    delays = [queue.add_rate_limited("k") for _ in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert queue.add_rate_limited("k", at_least=30) == 4.0  # a Retry-After beyond the cap
    queue.forget("k")
    assert queue.failures("k") == 0
    assert queue.add_rate_limited("k", at_least=3) == 3.0


def test_it_wakes_a_waiting_worker_and_stops_on_shut_down() -> None:
    queue: WorkQueue[str] = WorkQueue()
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(5)))
    worker.start()
    time.sleep(0.05)
    queue.add("x")
    worker.join(1)
    assert got == ["x"]

    waiter = threading.Thread(target=lambda: got.append(queue.get(None)))
    waiter.start()
    queue.shut_down()
    waiter.join(1)
    assert not waiter.is_alive()
    assert got == ["x", None]
    queue.add("y")
    assert queue.get(0) is None
