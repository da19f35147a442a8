"""Overload as API Priority and Fairness answers it, against a live server.

Sixteen concurrent creates from one client all succeed (the excess over the seats waits its
turn); a burst of 200 from one client queues what its queues hold and refuses the rest with
429 and Retry-After (1 s, longer while refusals keep coming); meanwhile another client,
sending one request at a time, is never refused and /livez keeps answering. How long the
polite client waits is measured by the benchmark (`benchmarks/run.py fairness`), not asserted
here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import liveserver
from tests.support.api import runtime_manifest
from tests.support.availability import livez_stays_up, run_in_threads
from tests.support.liveserver import LiveServer

GV = "/apis/nodus.dev/v1beta1"
TRS = f"{GV}/namespaces/demo/trainingruntimes"
BURST = 200


def _small(data_dir: Path) -> LiveServer:
    # A process with few seats and short queues, so a burst from this machine's one client
    # fills them: the same priority levels and fair queues, smaller bounds.
    return liveserver.start(
        data_dir,
        liveserver.prepare(data_dir),
        NODUS_FLOW_SEATS="2",
        NODUS_FLOW_QUEUE_LENGTH="4",
    )


@pytest.fixture(scope="module")
def small_server() -> Iterator[LiveServer]:
    yield from liveserver.serve("nodus-apf-", _small)


def test_sixteen_concurrent_creates_from_one_client_all_succeed(daphne_server: LiveServer) -> None:
    codes: list[int] = []
    start = threading.Barrier(16)
    with daphne_server.client("alice") as alice:

        def create(i: int) -> None:
            start.wait(timeout=30)
            answer = alice.post(TRS, json=runtime_manifest(f"burst16-{i}"), timeout=60)
            codes.append(answer.status_code)

        run_in_threads(16, create)
        assert codes == [201] * 16
        for i in range(16):
            assert alice.get(f"{TRS}/burst16-{i}").status_code == 200


def test_a_greedy_burst_queues_then_is_refused_while_a_polite_client_is_served(
    small_server: LiveServer,
) -> None:
    server = small_server
    # One connection per request in flight, so the burst really is 200 at once.
    greedy = httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {server.tokens['bob']}"},
        limits=httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST),
        timeout=60,
    )
    start = threading.Barrier(BURST)
    answers: list[httpx.Response] = []
    failures: list[str] = []

    def list_demo(i: int) -> None:
        start.wait(timeout=30)
        try:
            answers.append(greedy.get(TRS, timeout=60))
        except httpx.HTTPError as error:
            failures.append(repr(error))

    polite_codes: list[int] = []

    def polite(stop: threading.Event) -> None:
        with server.client("alice") as alice:
            while not stop.is_set() or len(polite_codes) < 5:
                polite_codes.append(alice.get(f"{GV}/namespaces/demo/trainingruntimes").status_code)

    with livez_stays_up(server.url):
        stop = threading.Event()
        writer = threading.Thread(target=polite, args=(stop,), daemon=True)
        writer.start()
        run_in_threads(BURST, list_demo)
        stop.set()
        writer.join(timeout=60)
    greedy.close()

    assert not failures, failures[:3]  # every request was answered: no timeout, no reset
    assert len(answers) == BURST
    codes = [answer.status_code for answer in answers]
    assert set(codes) == {200, 429}, sorted(set(codes))
    # What ran and what its queues held got answers; past them, 429.
    assert codes.count(200) >= 6 * 4
    waits = set()
    for answer in answers:
        assert "X-Kubernetes-PF-PriorityLevel-UID" in answer.headers
        if answer.status_code == 429:
            status = answer.json()
            assert (status["kind"], status["reason"], status["code"]) == (
                "Status",
                "TooManyRequests",
                429,
            )
            waits.add(status["details"]["retryAfterSeconds"])
            assert answer.headers["Retry-After"] == str(status["details"]["retryAfterSeconds"])
    # The first refusals say 1 s; if the burst's refusals run into a later second, the level
    # asks those refused then to wait longer (kube's dropped-requests tracker).
    assert 1 in waits
    assert waits <= {1, 2, 4, 8, 16, 32}
    # The other flow's requests never waited behind the burst's queues, nor were refused.
    assert polite_codes
    assert set(polite_codes) == {200}, polite_codes[:10]
