"""Overload answers 429 at once, never a timeout (runtimes.api.flowcontrol).

A herd of 60 lists fired at once by two clients gets some 429 TooManyRequests with
Retry-After, the rest their lists, while /livez keeps answering within a second and another
client's writes all succeed and are all there afterwards.
"""

from __future__ import annotations

import threading

import httpx

from tests.support.api import runtime_manifest
from tests.support.availability import livez_stays_up, run_in_threads
from tests.support.liveserver import LiveServer

GV = "/apis/nodus.dev/v1beta1"
HERD = 60


def test_a_herd_of_lists_gets_429s_while_livez_and_other_clients_writes_go_through(
    daphne_server: LiveServer,
) -> None:
    server = daphne_server
    herd = ("bob", "root")
    clients = {who: server.client(who) for who in herd}
    start = threading.Barrier(HERD)
    answers: list[httpx.Response] = []
    failures: list[str] = []

    def list_catalog(i: int) -> None:
        client = clients[herd[i % 2]]
        start.wait(timeout=30)
        try:
            answers.append(client.get(f"{GV}/namespaces/nodus/trainingruntimes", timeout=30))
        except httpx.HTTPError as error:
            failures.append(repr(error))

    acknowledged: list[str] = []
    writer_errors: list[str] = []

    def write(stop: threading.Event) -> None:
        with server.client("alice") as alice:
            n = 0
            while not stop.is_set() or n < 5:
                name = f"overload-{n}"
                answer = alice.post(
                    f"{GV}/namespaces/demo/trainingruntimes", json=runtime_manifest(name)
                )
                if answer.status_code == 201:
                    acknowledged.append(name)
                else:
                    writer_errors.append(f"{answer.status_code} {answer.text[:200]}")
                n += 1

    with livez_stays_up(server.url):
        stop = threading.Event()
        writer = threading.Thread(target=write, args=(stop,), daemon=True)
        writer.start()
        run_in_threads(HERD, list_catalog)
        stop.set()
        writer.join(timeout=60)
    for client in clients.values():
        client.close()

    assert not failures, failures[:3]  # every request was answered: no timeout, no reset
    assert len(answers) == HERD
    codes = sorted({answer.status_code for answer in answers})
    assert codes == [200, 429], codes
    for answer in answers:
        if answer.status_code == 429:
            assert answer.headers["Retry-After"] == "1"
            status = answer.json()
            assert (status["kind"], status["reason"], status["code"]) == (
                "Status",
                "TooManyRequests",
                429,
            )
            assert status["details"]["retryAfterSeconds"] == 1
        else:
            assert answer.json()["kind"] == "TrainingRuntimeList"
    # The writer is another client, in another pool: never refused, never lost.
    assert not writer_errors, writer_errors[:3]
    assert len(acknowledged) >= 5
    with server.client("alice") as alice:
        for name in acknowledged:
            assert alice.get(f"{GV}/namespaces/demo/trainingruntimes/{name}").status_code == 200
