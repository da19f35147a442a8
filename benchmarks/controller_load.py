"""The API beside an embedded controller working through 2,000 failing runtimes.

    .venv/bin/python benchmarks/run.py controller-load      # about 3 minutes

Seeds BENCH_CONTROLLER_RUNTIMES (2000) runtimes into a fresh SQLite data dir, each pinned to
an image on a registry that refuses connections (a loopback port nobody listens on, on the
allow-list, so the controller does try it: the cheapest failure, and so the most reconciles per
second, the worst case for the CPU the controller takes). Then `manage.py serve` runs twice on
that data: once with the embedded controller off (the idle baseline) and once with it on,
started with the whole backlog Pending. For BENCH_CONTROLLER_SECONDS (60) each, one client
sends, one after another, a GET of one runtime, a list page of 100 and a create, and the p50
and p99 of each print beside the idle server's, with what the controller got through. The
target (p99 within 2x idle) is printed as met or missed; nothing asserts.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson

from benchmarks.harness import Bench, Comparison, Timings, case
from benchmarks.server import environment, free_port, seeded, serving

ROOT = Path(__file__).resolve().parent.parent
GV = "/apis/nodus.dev/v1beta1"
NAMESPACE = "demo"


def _setting(name: str, default: str) -> str:
    return os.environ.get(f"BENCH_CONTROLLER_{name}", default)


def _log(message: str) -> None:
    print(f"[controller-load] {message}", file=sys.stderr, flush=True)


def manifest(name: str, registry: str) -> dict[str, object]:
    return {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"app": "trainer"}},
        "spec": {
            "image": f"{registry}/team/trainer@sha256:" + "ab" * 32,
            "task": "SFT",
            "command": ["python", "-m", "trainer"],
        },
    }


def seed(count: int, registry: str) -> None:
    """In a subprocess on the bench's data dir: the admin, its project, a token, COUNT runtimes
    through the store (validated creates: Pending, as a controller finds them at start)."""
    import django

    django.setup()
    from django.core.management import call_command

    from runtimes.accounts.bootstrap import ensure_admin, ensure_demo_project
    from runtimes.accounts.tokens import create_token
    from runtimes.registry.kinds import lookup
    from runtimes.storage import store

    call_command("migrate", interactive=False, verbosity=0)
    admin, _password, _generated = ensure_admin()
    project = ensure_demo_project(admin)
    rt = lookup("trainingruntimes")
    assert rt is not None
    for n in range(count):
        store.create(rt, project.name, manifest(f"failing-{n:05d}", registry))
    print(orjson.dumps({"token": create_token(admin, "bench")[1]}).decode())


def _environment(data_dir: Path, registry: str, controller: bool) -> dict[str, str]:
    return environment(data_dir, controller=controller, NODUS_REGISTRY_ALLOW=registry)


@contextmanager
def _serving(data_dir: Path, registry: str, controller: bool) -> Iterator[str]:
    log = data_dir / f"daphne-{'controller' if controller else 'idle'}.log"
    with serving(_environment(data_dir, registry, controller), log) as served:
        yield served.url


def probe(url: str, token: str, seconds: float, registry: str, tag: str) -> dict[str, list[float]]:
    """GET, list page and create, one after another, for `seconds`; each one's latencies."""
    collection = f"{GV}/namespaces/{NAMESPACE}/trainingruntimes"
    timings: dict[str, list[float]] = {"get": [], "list": [], "create": []}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        client.get(collection, params={"limit": "1"}).raise_for_status()  # warm
        calls: dict[str, Callable[[int], httpx.Response]] = {
            "get": lambda n: client.get(f"{collection}/failing-{n % 1000:05d}"),
            "list": lambda _n: client.get(collection, params={"limit": "100"}),
            "create": lambda n: client.post(
                collection, json=manifest(f"probe-{tag}-{n:05d}", registry)
            ),
        }
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            for verb, call in calls.items():
                started = time.perf_counter()
                call(n).raise_for_status()
                timings[verb].append(time.perf_counter() - started)
            n += 1
    return timings


def progress(url: str, token: str) -> dict[str, int]:
    """How many runtimes the controller has judged, by the Verified condition's reason
    ("unvisited": no condition yet)."""
    headers = {"Authorization": f"Bearer {token}"}
    reasons: dict[str, int] = {}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        items = client.get(f"{GV}/namespaces/{NAMESPACE}/trainingruntimes").json()["items"]
    for item in items:
        conditions = (item.get("status") or {}).get("conditions") or []
        verified = [c for c in conditions if c.get("type") == "Verified"]
        reason = verified[0].get("reason", "?") if verified else "unvisited"
        reasons[reason] = reasons.get(reason, 0) + 1
    return reasons


@case("controller-load", explicit=True)
def controller_load(_bench: Bench) -> Iterable[Comparison]:
    count = int(_setting("RUNTIMES", "2000"))
    seconds = float(_setting("SECONDS", "60"))
    registry = f"127.0.0.1:{free_port()}"  # bound, released: nobody listens there
    data_dir = Path(tempfile.mkdtemp(prefix="nodus-controller-load-"))
    try:
        env = _environment(data_dir, registry, controller=False)
        began = time.monotonic()
        token = str(seeded("benchmarks.controller_load", [count, registry], env)["token"])
        _log(f"seeded {count} runtimes on {registry} in {time.monotonic() - began:.0f} s")
        with _serving(data_dir, registry, controller=False) as url:
            idle = probe(url, token, seconds, registry, "idle")
        _log("idle server measured; starting the one with the controller")
        with _serving(data_dir, registry, controller=True) as url:
            busy = probe(url, token, seconds, registry, "busy")
            judged = progress(url, token)
        _log(f"after {seconds:.0f} s of the controller: {judged}")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    for verb in ("get", "list", "create"):
        measured = Timings(f"{verb} beside the controller", busy[verb])
        baseline = Timings(f"{verb}, controller off", idle[verb])
        ratio = measured.p99 / baseline.p99
        yield Comparison(
            measured,
            baseline,
            f"target p99 within 2x idle: {'MET' if ratio <= 2 else 'MISSED'} "
            f"(p99 {ratio:.2f}x); runtimes by Verified reason after {seconds:.0f} s: {judged}",
        )


if __name__ == "__main__":
    seed(int(sys.argv[1]), sys.argv[2])
