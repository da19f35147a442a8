"""Scale: 10,000 runtimes on PostgreSQL (+ Redis) and on SQLite, served by daphne.

    .venv/bin/python benchmarks/run.py scale

For each database: full list, 500-item pages and the Table list over HTTP beside serialising
the same objects with orjson in memory; creates and patches at a steady 50 writes/s beside GETs
at the same rate; watch delivery from commit to receipt across 1,000 concurrent watch streams
(another process, asyncio and raw sockets) beside a bare chunked-HTTP broadcast of the same
bytes from a minimal ASGI app under daphne; the server's RSS beside that app's. Each figure is
checked against its target, and the verdicts print with the figures. Commit time is the event
row's created_at, set inside the write's transaction just before it commits.

BENCH_SCALE_COUNT (10000), BENCH_SCALE_REPS (20), BENCH_SCALE_WATCHERS (1000),
BENCH_SCALE_WATCH_RATE (10 writes/s while watched), BENCH_SCALE_BACKENDS
(postgres,postgres-pool,sqlite: postgres-pool is PostgreSQL with psycopg's connection pool,
benchmarks/pool_settings.py)
and BENCH_SCALE_PHASES (lists,writes,watch) tune it. Each server's log is kept as
$TMPDIR/nodus-scale-<database>-daphne.log.
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx
import orjson

from benchmarks.harness import Bench, CaseSkipped, Comparison, Timings, case, timed
from benchmarks.scale_servers import (
    PG,
    REDIS,
    ROOT,
    Target,
    fanout_server,
    listening,
    rss_mb,
    seeded_server,
)

GV = "/apis/nodus.dev/v1beta1"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MERGE = {"Content-Type": "application/merge-patch+json"}
WRITE_RATE = 50.0
WRITE_SECONDS = 10.0
WATCH_SECONDS = 10.0
PAGE = 500


def _setting(name: str, default: str) -> str:
    return os.environ.get(f"BENCH_SCALE_{name}", default)


def _log(message: str) -> None:
    print(f"[scale] {message}", file=sys.stderr, flush=True)


def _verdict(what: str, met: bool, figure: str) -> str:
    return f"target {what}: {'MET' if met else 'MISSED'} ({figure})"


# -- lists -----------------------------------------------------------------------------------


def lists(target: Target, reps: int) -> Iterable[Comparison]:
    collection = f"{GV}/namespaces/{target.namespace}/trainingruntimes"
    with target.client() as client:
        body = client.get(collection).content  # warm: imports, caches, first connection
        items = orjson.loads(body)["items"]
        count = len(items)

        def full() -> None:
            client.get(collection).raise_for_status()

        listed = timed(f"full list of {count} (JSON)", [full] * reps)
        document = {
            "apiVersion": "nodus.dev/v1beta1",
            "kind": "TrainingRuntimeList",
            "metadata": {"resourceVersion": "1"},
            "items": items,
        }
        baseline = timed(f"orjson.dumps of those {count}", [lambda: orjson.dumps(document)] * reps)
        ratio = listed.p50 / baseline.p50
        yield Comparison(
            listed,
            baseline,
            _verdict("<= 5x orjson and < 1.5 s", ratio <= 5 and listed.p99 < 1.5, f"{ratio:.1f}x")
            + f"; {len(body) / 1e6:.1f} MB per list",
        )

        pages: list[float] = []
        while len(pages) < reps:
            token = ""
            while len(pages) < reps:
                params = {"limit": str(PAGE), **({"continue": token} if token else {})}
                began = time.perf_counter()
                answer = client.get(collection, params=params)
                pages.append(time.perf_counter() - began)
                token = answer.json()["metadata"].get("continue", "")
                if not token:
                    break
        paged = Timings(f"page of {PAGE} (limit, continue)", pages)
        page_doc = {**document, "items": items[:PAGE]}
        yield Comparison(
            paged,
            timed(f"orjson.dumps of {PAGE}", [lambda: orjson.dumps(page_doc)] * reps),
            _verdict("p99 < 100 ms", paged.p99 < 0.1, f"p99 {paged.p99 * 1000:.0f} ms"),
        )

        headers = {"Accept": TABLE}
        table_body = client.get(collection, headers=headers).content
        table = orjson.loads(table_body)

        def table_list() -> None:
            client.get(collection, headers=headers).raise_for_status()

        tabled = timed(f"Table list of {count}", [table_list] * reps)
        yield Comparison(
            tabled,
            timed("orjson.dumps of that Table", [lambda: orjson.dumps(table)] * reps),
            f"no target; {len(table_body) / 1e6:.1f} MB per Table",
        )


# -- steady writes ---------------------------------------------------------------------------

Send = Callable[[httpx.AsyncClient], Any]


def _post(path: str, body: bytes) -> Send:
    return lambda c: c.post(path, content=body, headers={"Content-Type": "application/json"})


def _patch(path: str, body: bytes) -> Send:
    return lambda c: c.patch(path, content=body, headers=MERGE)


def _get(path: str) -> Send:
    return lambda c: c.get(path)


async def _open_loop(
    url: str,
    token: str,
    requests: list[Send],
    rate: float,
) -> list[tuple[float, httpx.Response]]:
    """Sends request i at i/rate seconds whatever the earlier ones are doing (open loop)."""
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=60, limits=limits
    ) as client:
        loop = asyncio.get_running_loop()
        began = loop.time()

        async def one(i: int, send: Send) -> tuple[float, Any]:
            await asyncio.sleep(max(0.0, began + i / rate - loop.time()))
            started = time.perf_counter()
            response = await send(client)
            return time.perf_counter() - started, response

        return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))


def _new_runtime(template: dict[str, Any], name: str) -> dict[str, Any]:
    body = copy.deepcopy(template)
    meta = body["metadata"]
    body["metadata"] = {"name": name, "labels": meta.get("labels", {})}
    body.pop("status", None)
    return body


def writes(target: Target) -> Iterable[Comparison]:
    collection = f"{GV}/namespaces/{target.namespace}/trainingruntimes"
    with target.client() as client:
        page = client.get(collection, params={"limit": "200"}).json()["items"]
    names = [item["metadata"]["name"] for item in page]
    n = int(WRITE_RATE * WRITE_SECONDS)
    requests: list[Send] = []
    for i in range(n):
        if i % 2 == 0:
            body = orjson.dumps(_new_runtime(page[i % len(page)], f"bench-new-{i:05d}"))
            requests.append(_post(collection, body))
        else:
            patch = orjson.dumps({"metadata": {"labels": {"nodus.dev/round": str(i)}}})
            requests.append(_patch(f"{collection}/{names[i % len(names)]}", patch))
    done = asyncio.run(_open_loop(target.url, target.token, requests, WRITE_RATE))
    failed = [r for _s, r in done if r.is_error]
    if failed:
        _log(f"{len(failed)} writes failed, e.g. {failed[0].status_code} {failed[0].text[:300]}")
    creates = Timings(f"create at {WRITE_RATE / 2:.0f}/s", [s for s, _r in done[0::2]])
    patches = Timings(f"patch at {WRITE_RATE / 2:.0f}/s", [s for s, _r in done[1::2]])
    gets = [_get(f"{collection}/{names[i % len(names)]}") for i in range(n // 2)]
    read = asyncio.run(_open_loop(target.url, target.token, gets, WRITE_RATE))
    baseline = Timings(f"GET one at {WRITE_RATE:.0f}/s", [s for s, _r in read])
    for timings in (creates, patches):
        yield Comparison(
            timings,
            baseline,
            _verdict("p99 < 50 ms", timings.p99 < 0.05, f"p99 {timings.p99 * 1000:.0f} ms")
            + (f"; {len(failed)} writes failed" if failed else ""),
        )


# -- watch fan-out ---------------------------------------------------------------------------


class Watchers:
    """The watcher process: COUNT streams on one URL path."""

    def __init__(self, url: str, path: str, count: int, token: str = "") -> None:
        host, port = url.removeprefix("http://").split(":")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.watchers", host, port, path, str(count), token],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            self.process.kill()
            raise RuntimeError(f"watchers did not connect: {ready!r}")

    def until(self, revision: int) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(f"until {revision}\n")
        self.process.stdin.flush()
        result: dict[str, Any] = orjson.loads(self.process.stdout.readline())
        return result

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


def _latencies(receipts: dict[str, list[float]], origins: dict[int, float]) -> list[float]:
    return [
        t - origins[int(rv)] for rv, times in receipts.items() if int(rv) in origins for t in times
    ]


def watch(target: Target, count: int, rate: float) -> tuple[Timings, dict[str, Any], list[bytes]]:
    """Delivery latency across `count` watchers while patches arrive at `rate` per second."""
    collection = f"{GV}/namespaces/{target.namespace}/trainingruntimes"
    with target.client() as client:
        listed = client.get(collection, params={"limit": "100"}).json()
    names = [item["metadata"]["name"] for item in listed["items"]]
    start = listed["metadata"]["resourceVersion"]
    began = time.monotonic()
    watchers = Watchers(
        target.url, f"{collection}?watch=1&resourceVersion={start}", count, target.token
    )
    _log(f"{target.name}: {count} watchers connected in {time.monotonic() - began:.1f} s")
    try:
        n = int(rate * WATCH_SECONDS)
        requests = [
            _patch(
                f"{collection}/{names[i % len(names)]}",
                orjson.dumps({"metadata": {"labels": {"w": str(i)}}}),
            )
            for i in range(n)
        ]
        done = asyncio.run(_open_loop(target.url, target.token, requests, rate))
        objects = [r.json() for _s, r in done if not r.is_error]
        revisions = [int(o["metadata"]["resourceVersion"]) for o in objects]
        result = watchers.until(max(revisions))
        rss, peak = rss_mb(target.pid)
    finally:
        watchers.close()
    origins = target.committed_at(revisions)
    latencies = _latencies(result["receipts"], origins)
    delivered = sum(len(result["receipts"].get(str(r), [])) for r in revisions)
    info = {
        "expected": len(revisions) * count,
        "delivered": delivered,
        "short": result["short"],
        "errors": result["errors"],
        "rss": rss,
        "peak": peak,
    }
    lines = [orjson.dumps({"type": "MODIFIED", "object": o}) + b"\n" for o in objects]
    return Timings(f"watch delivery, {count} watchers", latencies), info, lines


def fanout_baseline(lines: list[bytes], count: int, rate: float) -> tuple[Timings, float]:
    """The same event bytes broadcast by the bare ASGI app to as many streams."""
    with fanout_server() as (url, pid):
        watchers = Watchers(url, "/watch", count)
        try:
            httpx.post(
                f"{url}/publish",
                content=orjson.dumps({"lines": [x.decode() for x in lines], "interval": 1 / rate}),
            ).raise_for_status()
            last = max(int(orjson.loads(x)["object"]["metadata"]["resourceVersion"]) for x in lines)
            result = watchers.until(last)
            sent = {int(k): v for k, v in httpx.get(f"{url}/times").json().items()}
            rss, _peak = rss_mb(pid)
        finally:
            watchers.close()
    return Timings(f"bare broadcast, {count} streams", _latencies(result["receipts"], sent)), rss


# -- the case --------------------------------------------------------------------------------


@case("scale", explicit=True)
def scale(bench: Bench) -> Iterable[Comparison]:
    count = int(_setting("COUNT", "10000"))
    reps = int(_setting("REPS", "20"))
    watchers = int(_setting("WATCHERS", "1000"))
    rate = float(_setting("WATCH_RATE", "10"))
    backends = _setting("BACKENDS", "postgres,postgres-pool,sqlite").split(",")
    phases = _setting("PHASES", "lists,writes,watch").split(",")
    if not (listening(*PG[:2]) and listening(*REDIS)):
        _log("PostgreSQL or Redis is not listening: SQLite only")
        backends = [b for b in backends if not b.startswith("postgres")]
    if "postgres-pool" in backends and importlib.util.find_spec("psycopg_pool") is None:
        _log("psycopg-pool is not installed: no postgres-pool run")
        backends.remove("postgres-pool")
    if not backends:
        raise CaseSkipped("no database to run on")
    fanout: tuple[Timings, float] | None = None
    for kind in backends:
        began = time.monotonic()
        with seeded_server(kind, count) as target:
            _log(f"{kind}: seeded {target.seeded} and serving in {time.monotonic() - began:.0f} s")
            if "lists" in phases:
                for comparison in lists(target, reps):
                    yield _named(kind, comparison)
                _log(f"{kind}: lists done; RSS now/peak MB {rss_mb(target.pid)}")
            if "writes" in phases:
                for comparison in writes(target):
                    yield _named(kind, comparison)
                _log(f"{kind}: writes done; RSS now/peak MB {rss_mb(target.pid)}")
            if "watch" not in phases:
                continue
            delivery, info, lines = watch(target, watchers, rate)
            if fanout is None:
                fanout = fanout_baseline(lines, watchers, rate)
            baseline, baseline_rss = fanout
            note = _verdict(
                "p99 < 250 ms", delivery.p99 < 0.25, f"p99 {delivery.p99 * 1000:.0f} ms"
            ) + (
                f"; {info['delivered']}/{info['expected']} events delivered at {rate:g} writes/s"
                f", {info['short']} streams short, errors {info['errors'] or 'none'}"
            )
            yield _named(kind, Comparison(delivery, baseline, note))
            rss_note = _verdict(
                "RSS < 600 MB", info["peak"] < 600, f"peak {info['peak']:.0f} MB"
            ) + (
                f"; {info['rss']:.0f} MB after the watch run, bare broadcast app "
                f"{baseline_rss:.0f} MB; machine load average {os.getloadavg()[1]:.1f} "
                f"(5 min) on {os.cpu_count()} CPUs"
            )
            yield _named(
                kind,
                Comparison(
                    Timings("server RSS (peak MB, as s)", [info["peak"] / 1000]),
                    Timings("bare broadcast app RSS", [baseline_rss / 1000]),
                    rss_note,
                ),
            )


def _named(kind: str, comparison: Comparison) -> Comparison:
    comparison.measured.label = f"{kind}: {comparison.measured.label}"
    return comparison
