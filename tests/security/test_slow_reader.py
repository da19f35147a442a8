"""A watcher that stops reading is cut off, not buffered for: the server keeps a mebibyte of
unsent bytes for a stream that has read nothing for STALLED_SECONDS, and BURST_UNSENT_BYTES for
any (runtimes.api.serving).

A raw-socket watch with a tiny receive buffer never reads while 300 runtimes of about 24 KB
each are created (about 7 MB of events for it, more than the kernel's buffers hold). Once it has
read nothing for longer than STALLED_SECONDS, its connection has been closed by the server
(reading what was sent ends in EOF or a reset, well short of every event), another client's
watch got every event, /livez answered within a second throughout, and every create was
acknowledged and is there.
"""

from __future__ import annotations

import socket
import threading
import time

import httpx
import orjson

from runtimes.api import serving
from tests.support.api import runtime_manifest
from tests.support.availability import livez_stays_up
from tests.support.liveserver import LiveServer

GV = "/apis/nodus.dev/v1beta1"
COLLECTION = f"{GV}/namespaces/demo/trainingruntimes"
CREATES = 300
PAD = 24_000


def test_a_watcher_that_stops_reading_is_cut_off_and_others_get_everything(
    daphne_server: LiveServer,
) -> None:
    server = daphne_server
    host, port = server.url.removeprefix("http://").split(":")
    with server.client("alice") as alice:
        revision = alice.get(COLLECTION).json()["metadata"]["resourceVersion"]
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect((host, int(port)))
    stalled.sendall(
        f"GET {COLLECTION}?watch=1&resourceVersion={revision} HTTP/1.1\r\nHost: test\r\n"
        f"Authorization: Bearer {server.tokens['bob']}\r\n\r\n".encode()
    )
    seen: list[str] = []
    reading = threading.Event()

    def follow() -> None:
        headers = {"Authorization": f"Bearer {server.tokens['root']}"}
        params = {"watch": "1", "resourceVersion": revision, "timeoutSeconds": "120"}
        with (
            httpx.Client(base_url=server.url, headers=headers, timeout=120) as client,
            client.stream("GET", COLLECTION, params=params) as stream,
        ):
            reading.set()
            for line in stream.iter_lines():
                if line:
                    seen.append(orjson.loads(line)["object"]["metadata"]["name"])
                if len(seen) == CREATES:
                    return

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert reading.wait(30)
    acknowledged = []
    with livez_stays_up(server.url), server.client("alice") as alice:
        for n in range(CREATES):
            body = runtime_manifest(f"slow-reader-{n:03d}")
            body["metadata"]["annotations"] = {"pad": "x" * PAD}
            answer = alice.post(COLLECTION, json=body)
            assert answer.status_code == 201, answer.text
            acknowledged.append(body["metadata"]["name"])
    follower.join(60)
    time.sleep(serving.STALLED_SECONDS + 1)  # whatever the kernel took, it has read nothing since

    received = 0
    stalled.settimeout(10)
    try:
        while chunk := stalled.recv(65536):
            received += len(chunk)
    except ConnectionResetError:
        pass  # cut off with a reset: what it had not read is gone
    finally:
        stalled.close()
    assert received < CREATES * PAD  # it was closed well short of every event
    assert seen == acknowledged  # the reading watcher got them all, in order
    with server.client("alice") as alice:
        names = {i["metadata"]["name"] for i in alice.get(COLLECTION).json()["items"]}
    assert set(acknowledged) <= names
