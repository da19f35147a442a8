"""Availability under attack, for the security tests: /livez keeps answering, attacks on threads.

Every attack test asserts the status code it must get, that `/livez` keeps answering while the
attack runs (`livez_stays_up`), and that no acknowledged write is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

# An availability bound, not a speed one: a stalled server (a backtracking regex, a blocked
# event loop) does not answer for minutes; a CI machine running tests on every core can delay a
# healthy answer by a second or two. How fast /livez answers under attack is measured by
# `benchmarks/run.py abuse`.
LIVEZ_BUDGET_SECONDS = 5.0


@contextmanager
def livez_stays_up(url: str, interval: float = 0.1) -> Iterator[list[float]]:
    """Polls `url`/livez beside the block; fails the test if a poll goes unanswered in the budget.

    Yields the list of answer times (seconds), filled while the block runs. The bound is an
    availability requirement (other users are not stalled), not a speed measurement.
    """
    answered: list[float] = []
    failures: list[str] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=url, timeout=LIVEZ_BUDGET_SECONDS) as client:
            while True:  # at least one poll, however short the block
                try:
                    response = client.get("/livez")
                    answered.append(response.elapsed.total_seconds())
                    if response.status_code != 200:
                        failures.append(f"/livez answered {response.status_code}")
                except httpx.HTTPError as error:
                    failures.append(f"/livez did not answer in {LIVEZ_BUDGET_SECONDS} s: {error!r}")
                if stop.wait(interval):
                    return

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        yield answered
    finally:
        stop.set()
        poller.join(timeout=LIVEZ_BUDGET_SECONDS + 5)
    assert not failures, failures[:3]
    assert answered, "/livez was never polled during the attack"


def run_in_threads(count: int, attack: Callable[[int], None]) -> None:
    """Runs `attack(i)` on `count` threads at once and waits for all of them."""
    threads = [threading.Thread(target=attack, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
