"""API Priority and Fairness under a greedy client: a polite client's latency, idle and while
another client keeps 200 requests in flight (the target: its p99 within 2x its idle p99).

Both are ordinary users (global-default), each a flow of its own; the greedy one's burst is
queued fairly and its excess refused with 429 (it then waits Retry-After, as client-go does),
which is counted and printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import httpx

from benchmarks.harness import Bench, Comparison, Timings, case, repeat

GV = "/apis/nodus.dev/v1beta1"
GREEDY_IN_FLIGHT = 200
# The greedy client: N threads listing as fast as they are answered, waiting Retry-After on a
# 429 as client-go does, until the stop file appears; then the counts by status. Its clients
# are all made before the first request (the ready file says so): made one by one, each
# loading the CA bundle, they kept both of this machine's cores busy for 4-5 s, and the
# server starved for CPU while the polite client was being measured.
GREEDY = """
import json, pathlib, ssl, sys, threading, httpx
url, token, path, n, stop, ready, out = sys.argv[1:8]
stop, codes, lock = pathlib.Path(stop), {}, threading.Lock()
tls = ssl.create_default_context()
clients = [
    httpx.Client(base_url=url, headers={"Authorization": "Bearer " + token}, timeout=60, verify=tls)
    for _ in range(int(n))
]
go = threading.Barrier(int(n) + 1)
def run(c):
    go.wait()
    while not stop.exists():
        a = c.get(path)
        with lock:
            codes[a.status_code] = codes.get(a.status_code, 0) + 1
        if a.status_code == 429:
            threading.Event().wait(float(a.headers.get("Retry-After", "1")))
threads = [threading.Thread(target=run, args=(c,)) for c in clients]
[t.start() for t in threads]
go.wait()
pathlib.Path(ready).touch()
[t.join() for t in threads]
pathlib.Path(out).write_text(json.dumps(codes))
"""


def _user_token(name: str, namespace: str) -> str:
    from django.contrib.auth import get_user_model

    from runtimes.accounts.tokens import create_token
    from runtimes.storage.models import Membership, Project, Role

    user, _ = get_user_model().objects.get_or_create(username=name)
    project = Project.objects.get(name=namespace)
    Membership.objects.get_or_create(project=project, user=user, defaults={"role": Role.VIEWER})
    return create_token(user, "bench")[1]


@case("fairness")
def fairness(bench: Bench) -> Iterable[Comparison]:
    server = bench.context["server"]
    collection = f"{GV}/namespaces/{server.namespace}/trainingruntimes"
    polite_token = _user_token("bench-polite", server.namespace)
    greedy_token = _user_token("bench-greedy", server.namespace)

    def client(token: str) -> httpx.Client:
        return httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

    # Ten times the usual count (1,000): the p99 of 100 is their second-worst, one stall's mark.
    n = bench.repeat * 10
    with client(polite_token) as polite:
        polite.get(collection).raise_for_status()
        idle = repeat("polite GET list, idle", n, lambda _i: polite.get(collection))

        # The greedy client runs in a process of its own, so its threads do not slow the
        # polite client's measurements inside this one.
        with tempfile.TemporaryDirectory() as work:
            stop, ready = Path(work) / "stop", Path(work) / "ready"
            counts = Path(work) / "codes.json"
            greedy = subprocess.Popen(
                [sys.executable, "-c", GREEDY, server.url, greedy_token, collection,
                 str(GREEDY_IN_FLIGHT), str(stop), str(ready), str(counts)],
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 120
                while not ready.exists() and greedy.poll() is None:
                    if time.monotonic() > deadline:
                        raise TimeoutError("the greedy client did not start within 120 s")
                    time.sleep(0.05)
                time.sleep(0.1)  # the burst is under way
                busy = repeat(
                    "polite GET list, beside 200 greedy in flight",
                    n,
                    lambda _i: polite.get(collection),
                )
            finally:
                stop.touch()
                greedy.wait(timeout=120)
            codes = json.loads(counts.read_text()) if counts.exists() else {}
    ratio = busy.p99 / idle.p99 if idle.p99 else float("inf")
    yield Comparison(
        busy,
        idle,
        note=f"p99 ratio {ratio:.2f} (target <= 2); greedy answers by status: {codes}",
    )
    yield Comparison(
        Timings("polite p99 beside the burst", [busy.p99]), Timings("idle p99", [idle.p99])
    )
