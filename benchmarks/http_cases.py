"""Requests over HTTP against the live daphne, beside the same store calls made in-process.

The ratio is what the HTTP path costs on top of the store itself: ASGI, middleware, DRF,
authentication, access checks, negotiation and serialisation.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from benchmarks.harness import Bench, Comparison, case, repeat

GV = "/apis/nodus.dev/v1beta1"

MANIFEST: dict[str, Any] = {
    "apiVersion": "nodus.dev/v1beta1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "", "labels": {"app": "trainer"}},
    "spec": {
        "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32,
        "task": "SFT",
        "command": ["python", "-m", "trainer"],
    },
}


def manifest(name: str) -> dict[str, Any]:
    body = copy.deepcopy(MANIFEST)
    body["metadata"]["name"] = name
    return body


@case("http")
def http_create_and_get(bench: Bench) -> Iterable[Comparison]:
    from runtimes.registry.kinds import lookup
    from runtimes.storage import store

    server = bench.context["server"]
    n = bench.repeat
    collection = f"{GV}/namespaces/{server.namespace}/trainingruntimes"
    rt = lookup("trainingruntimes")
    assert rt is not None

    with server.client() as client:
        client.get(f"{collection}").raise_for_status()  # warm: imports, first connection

        def post(i: int) -> None:
            client.post(collection, json=manifest(f"http-{i}")).raise_for_status()

        def get(i: int) -> None:
            client.get(f"{collection}/http-{i}").raise_for_status()

        before = server.cpu_seconds()
        http_creates = repeat("POST create over HTTP", n, post)
        between = server.cpu_seconds()
        http_gets = repeat("GET over HTTP", n, get)
        after = server.cpu_seconds()
        # The floor of any request: daphne, ASGI and the middleware, no auth, no store.
        livez = repeat("GET /livez over HTTP", n, lambda _i: client.get("/livez"))

    store.create(rt, server.namespace, manifest("warm"))
    local_creates = repeat(
        "store.create in-process",
        n,
        lambda i: store.create(rt, server.namespace, manifest(f"local-{i}")),
    )
    local_gets = repeat(
        "store.get in-process", n, lambda i: store.get(rt, server.namespace, f"local-{i}")
    )
    # What the server spent, all its threads together: the figure a busy server runs out of.
    create_cpu = (between - before) / n * 1000
    get_cpu = (after - between) / n * 1000
    yield Comparison(
        http_creates, local_creates, note=f"server CPU per create: {create_cpu:.2f} ms"
    )
    yield Comparison(http_gets, local_gets, note=f"server CPU per GET: {get_cpu:.2f} ms")
    yield Comparison(
        http_gets, livez, note="the API's own cost per GET: auth, access, negotiation, JSON"
    )
