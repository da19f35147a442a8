"""The embedded controller working through 2,000 runtimes whose registry is unreachable.

Once this kept one core busy for minutes and API lists timed out after 60 s. Now the
controller reconciles with bounded concurrency, a bounded CPU share and per-runtime jittered
backoff, off the request path (runtimes.controller.loop, runtimes.controller.pacing).

2,000 runtimes are created in project `demo` through the store (Pending, as a controller finds
them after a restart), each pinned to an image on a registry that refuses connections but is
on the allow-list, so the controller does try it: the cheapest failure, and so the most
reconciles per second. `manage.py serve` then starts with the embedded controller and the whole
backlog. For 20 s a client reads one runtime, lists a page of 100 and creates a runtime, one
after another: every request must be answered (no timeout, no 429) while /livez answers within
1 s, the controller must meanwhile have marked runtimes as waiting for the registry (so the load
was real), and every acknowledged create is there afterwards. The p99 beside the idle server's
is measured by `benchmarks/run.py controller-load`, not asserted here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.api import runtime_manifest
from tests.support.availability import livez_stays_up
from tests.support.liveserver import prepare, serve_command, server_environment
from tests.support.manage import shell_in
from tests.support.ports import free_port

GV = "/apis/nodus.dev/v1beta1"
RUNTIMES = 2000
SECONDS = 20.0
COLLECTION = f"{GV}/namespaces/demo/trainingruntimes"

_SEED = """
from runtimes.registry.kinds import lookup
from runtimes.storage import store
rt = lookup("trainingruntimes")
for n in range({count}):
    store.create(rt, "demo", {manifest!r} | {{"metadata": {{"name": f"failing-{{n:05d}}"}}}})
print("seeded")
"""


def waiting_for_registry(client: httpx.Client) -> int:
    """How many runtimes carry a Verified condition of status Unknown (retrying the registry)."""
    items = client.get(COLLECTION).json()["items"]
    return sum(
        1
        for item in items
        for condition in (item.get("status") or {}).get("conditions") or []
        if condition.get("type") == "Verified" and condition.get("status") == "Unknown"
    )


def test_api_answers_everything_while_the_controller_retries_2000_unreachable_images(
    tmp_path: Path,
) -> None:
    (tmp_path / "static").mkdir()
    tokens = prepare(tmp_path, server_environment(tmp_path))
    registry = f"127.0.0.1:{free_port()}"  # bound, then released: nobody listens there
    image = f"{registry}/team/trainer@sha256:" + "ab" * 32
    manifest = runtime_manifest("x", image=image)
    assert "seeded" in shell_in(
        tmp_path, _SEED.format(count=RUNTIMES, manifest=manifest), timeout=600
    )

    answered: list[int] = []
    errors: list[str] = []
    acknowledged: list[str] = []
    with (
        serve_command(tmp_path, NODUS_EMBEDDED_CONTROLLER="1", NODUS_REGISTRY_ALLOW=registry) as (
            _process,
            port,
        ),
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {tokens['alice']}"},
            timeout=10,
        ) as client,
    ):
        with livez_stays_up(f"http://127.0.0.1:{port}"):
            end = time.monotonic() + SECONDS
            n = 0
            while time.monotonic() < end:
                name = f"beside-{n:04d}"
                calls: tuple[tuple[str, str, dict[str, Any]], ...] = (
                    ("GET", f"{COLLECTION}/failing-{n % RUNTIMES:05d}", {}),
                    ("GET", COLLECTION, {"params": {"limit": "100"}}),
                    ("POST", COLLECTION, {"json": runtime_manifest(name, image=image)}),
                )
                for method, path, options in calls:
                    try:
                        answer = client.request(method, path, **options)
                    except httpx.HTTPError as error:
                        errors.append(repr(error))
                        continue
                    answered.append(answer.status_code)
                    if answer.status_code == 201:
                        acknowledged.append(name)
                n += 1
        waiting = waiting_for_registry(client)
        present = {item["metadata"]["name"] for item in client.get(COLLECTION).json()["items"]}

    assert not errors, errors[:3]
    assert set(answered) == {200, 201}, sorted(set(answered))
    assert len(acknowledged) == n
    assert waiting > 0, "the controller never reached the registry: the backlog was not worked"
    assert not [name for name in acknowledged if name not in present]
    assert len(present) == RUNTIMES + len(acknowledged)
