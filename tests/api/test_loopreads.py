"""GETs, lists and watch starts served on the event loop (runtimes.api.loopreads), live.

A token's first request is served by the pooled DRF view, which looks its user up; the requests
after it (here within a minute: NODUS_ACCESS_CACHE_SECONDS=60) are answered on the loop from the
watch cache. `nodus_loop_reads_total` says which path answered, so each test knows what it
compares: the loop's answer byte for byte against the pooled view's, a consistent read right
after a write, a watch started on the loop, and what the loop leaves to the pool.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support import liveserver
from tests.support.liveserver import LiveServer
from tests.support.watch_live import DEMO, manifest

MANAGED = "/apis/nodus.dev/v1beta1/namespaces/nodus/trainingruntimes"
CLUSTER = "/apis/nodus.dev/v1beta1/trainingruntimes"
PLURAL = "trainingruntimes"
KUBECTL_GET = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def _start(data_dir: Path) -> LiveServer:
    # Tokens stay remembered for the whole module; lists over 2 KiB stream.
    return liveserver.start(
        data_dir,
        liveserver.prepare(data_dir),
        NODUS_ACCESS_CACHE_SECONDS="60",
        NODUS_LIST_STREAM_BYTES="2048",
    )


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from liveserver.serve("nodus-loopreads-", _start)


def loop_reads(server: LiveServer, verb: str) -> float:
    text = httpx.get(f"{server.url}/metrics").raise_for_status().text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "nodus_loop_reads_total"
        and s.labels.get("verb") == verb
        and s.labels.get("resource") == PLURAL
    )


# Headers that differ between any two answers.
# The flow schema follows who is remembered when the request arrives: a token's first request
# is global-default, a platform admin's next one exempt.
PER_REQUEST = {
    "date",
    "x-request-id",
    "audit-id",
    "x-kubernetes-pf-flowschema-uid",
    "x-kubernetes-pf-prioritylevel-uid",
}


def answer(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in response.headers.items() if k not in PER_REQUEST}
    return response.status_code, headers, response.content


def pooled_then_loop(
    server: LiveServer, who: str, verb: str, path: str, **params: Any
) -> tuple[httpx.Response, httpx.Response]:
    """The same request twice with `who`'s unused token: the pool answers, then the loop."""
    with server.client(who) as client:
        before = loop_reads(server, verb)
        pooled = client.get(path, params=params)
        assert loop_reads(server, verb) == before, "a token never seen was served on the loop"
        looped = client.get(path, params=params)
        assert loop_reads(server, verb) == before + 1, "the second request went to the pool"
    return pooled, looped


def test_the_loop_answers_byte_for_byte_as_the_pooled_views(server: LiveServer) -> None:
    """A GET (bob, a viewer of demo), a selected page of the managed catalog (charlie, no
    role anywhere) and a cluster-wide list (root): each answered once by the pooled view and
    once on the loop, with the same status, headers and body."""
    with server.client("alice") as alice:
        made = alice.post(DEMO, json=manifest("loop-a", {"bench": "probe"}))
        assert made.status_code == 201, made.text
    pooled, looped = pooled_then_loop(server, "bob", "get", f"{DEMO}/loop-a")
    assert pooled.status_code == 200
    assert answer(looped) == answer(pooled)
    assert looped.json() == made.json()

    pooled, looped = pooled_then_loop(
        server, "charlie", "list", MANAGED, labelSelector="nodus.dev/task=sft", limit="1"
    )
    assert pooled.status_code == 200
    assert len(pooled.json()["items"]) == 1
    assert pooled.json()["metadata"].get("continue")
    assert answer(looped) == answer(pooled)

    pooled, looped = pooled_then_loop(server, "root", "list", CLUSTER)
    assert pooled.status_code == 200
    assert len(pooled.content) > 2048  # streamed on the loop, with its length
    assert {o["metadata"]["namespace"] for o in pooled.json()["items"]} == {"demo", "nodus"}
    assert answer(looped) == answer(pooled)


def test_a_list_on_the_loop_right_after_a_write_shows_it(server: LiveServer) -> None:
    """Consistent reads: each list (resourceVersion unset) follows a write at once and holds
    it, at a resourceVersion at least the write's; all but the first are served on the loop."""
    before = loop_reads(server, "list")
    with server.client("alice") as alice:
        for i in range(10):
            written = alice.post(DEMO, json=manifest(f"fresh-{i}", {"round": str(i)}))
            assert written.status_code == 201, written.text
            listed = alice.get(DEMO, params={"labelSelector": f"round={i}"}).json()
            assert [o["metadata"]["name"] for o in listed["items"]] == [f"fresh-{i}"]
            assert int(listed["metadata"]["resourceVersion"]) >= int(
                written.json()["metadata"]["resourceVersion"]
            )
            got = alice.get(f"{DEMO}/fresh-{i}")
            assert got.json() == written.json()
    assert loop_reads(server, "list") - before >= 9
    with server.client("alice") as alice:
        alice.get(DEMO).raise_for_status()
        before = loop_reads(server, "list")
        anyone = alice.get(DEMO, params={"resourceVersion": "0"})  # any revision: the cache's
        assert anyone.status_code == 200
        assert {f"fresh-{i}" for i in range(10)} <= {
            o["metadata"]["name"] for o in anyone.json()["items"]
        }
        assert loop_reads(server, "list") == before + 1


def test_a_watch_started_on_the_loop_delivers_what_follows(server: LiveServer) -> None:
    """An informer's start: list, then watch from the list's resourceVersion; the watch is
    planned on the loop and delivers the next write and nothing before it."""
    with server.client("alice") as alice:
        alice.get(DEMO).raise_for_status()  # the token is remembered now
        listed = alice.get(DEMO).json()
        before = loop_reads(server, "watch")
        seen: list[dict[str, Any]] = []
        opened = threading.Event()

        def watch() -> None:
            params = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"]}
            with alice.stream("GET", DEMO, params=params, timeout=30) as stream:
                assert stream.status_code == 200
                opened.set()
                for line in stream.iter_lines():
                    if line:
                        seen.append(orjson.loads(line))
                        return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        assert opened.wait(10)
        assert loop_reads(server, "watch") == before + 1
        made = alice.post(DEMO, json=manifest("watched"))
        assert made.status_code == 201
        watcher.join(15)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [("ADDED", "watched")]


def test_what_the_loop_cannot_answer_goes_to_the_pool(server: LiveServer) -> None:
    """Missing objects, forbidden reads, writes, old revisions, pretty output and other media
    types are answered by the pooled views, as before."""
    with server.client("bob") as bob:
        bob.get(DEMO).raise_for_status()
        before = loop_reads(server, "get") + loop_reads(server, "list")
        assert bob.get(f"{DEMO}/nope").status_code == 404
        refused = bob.post(DEMO, json=manifest("not-mine"))
        assert refused.status_code == 403
        for path in (DEMO, f"{DEMO}/loop-a"):  # what kubectl get asks for
            table = bob.get(path, headers={"Accept": KUBECTL_GET})
            assert table.json()["kind"] == "Table", path
        pretty = bob.get(DEMO, params={"pretty": "true"})
        assert pretty.text.startswith('{\n  "apiVersion"')
        exact = bob.get(DEMO, params={"resourceVersion": "1", "resourceVersionMatch": "Exact"})
        assert exact.status_code in (200, 410)
        assert loop_reads(server, "get") + loop_reads(server, "list") == before
    with server.client("charlie") as charlie:
        charlie.get(MANAGED).raise_for_status()
        denied = charlie.get(DEMO)
        assert denied.status_code == 403
        assert denied.json()["reason"] == "Forbidden"
