"""The herd's loads, written once against `Target` and run against nodus and against etcd.

Every time is `time.perf_counter()` in this one process: a write's start, a watcher's receipt
(taken when its bytes arrive, `herd_http`), a herd member's start and its watch's 200.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from benchmarks.herd_http import Client, Closed, Connection, Counters

PADDING = "bench.nodus.dev/padding"
SEQ = "bench.nodus.dev/seq"
REQUEST_SECONDS = 300.0  # the longest any one request may take (the big list included)


@dataclass(frozen=True)
class Settings:
    """Every count of the herd case; `settings()` reads them from BENCH_HERD_<NAME>."""

    objects: int = 2000  # load 1: creates of ~SIZE-byte objects, INFLIGHT at a time
    size: int = 4096
    inflight: int = 16
    lists: int = 5  # load 2: full lists
    clients: int = 200  # load 3: herd members, each with its own token
    deadline: float = 60  # a member not watching this long after the start is dropped
    events: int = 20  # load 4 (and 5): updates of the probe, one every INTERVAL s
    interval: float = 0.05
    watchers: int = 1000  # load 5
    rate: float = 50  # load 6: creates per second for RATE_SECONDS with CLIENTS watching
    rate_seconds: float = 10
    big: bool = True  # load 7: up to BIG_OBJECTS objects with WATCHERS open, then RSS
    big_objects: int = 10000
    wait: float = 20  # how long deliveries may trail the last write
    etcd: bool = True  # BENCH_HERD_ETCD=0: the nodus side only
    processes: int = 4  # the herds' client processes (`herd_spread`); 1: this process alone
    controller: bool = True  # BENCH_HERD_CONTROLLER=0: nodus without its embedded controller


def settings() -> Settings:
    values: dict[str, object] = {}
    for name, kind in Settings.__annotations__.items():
        raw = os.environ.get(f"BENCH_HERD_{name.upper()}")
        if raw is None:
            continue
        if kind == "bool":
            values[name] = raw.strip().lower() not in {"0", "false", "no", ""}
        else:
            values[name] = int(raw) if kind == "int" else float(raw)
    return Settings(**values)  # type: ignore[arg-type]


def manifest(name: str, probe: bool, size: int, seq: int | None = None) -> dict[str, object]:
    """A TrainingRuntime of about `size` bytes of JSON: an annotation pads it. Every object has
    the label group=herd; the probe alone has bench=probe."""
    labels = {"group": "herd", **({"bench": "probe"} if probe else {})}
    annotations = {PADDING: "x" * _padding(probe, size)}
    if seq is not None:
        annotations[SEQ] = str(seq)
    return {
        "apiVersion": "nodus.dev/v1beta1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "image": "registry.nodus.dev/trainers/sft:1.0@sha256:" + "ab" * 32,
            "task": "SFT",
            "command": ["python", "-m", "trainer"],
        },
    }


@functools.cache
def _padding(probe: bool, size: int) -> int:
    """How many padding characters bring the manifest to `size` bytes."""
    if size <= 0:
        return 0
    return max(0, size - len(orjson.dumps(manifest("herd-00000", probe, 0))))


def manifest_bytes(name: str, probe: bool, size: int, seq: int | None = None) -> bytes:
    return orjson.dumps(manifest(name, probe, size, seq))


class Target:
    """A server under the herd; nodus (`herd_nodus.Nodus`) and etcd (`etcd_peer.Etcd`)."""

    health_path = "/livez"
    probe_name = "herd-00000"
    size = 4096  # each object's bytes; the case sets BENCH_HERD_SIZE's
    server_log: Path | None = None  # the server's log, where it names the watchers it cuts

    def __init__(self, name: str, host: str, port: int, pid: int) -> None:
        self.name, self.host, self.port, self.pid = name, host, port, pid

    def member(self, i: int) -> Client:
        """Herd member i's own client (its own credentials)."""
        raise NotImplementedError

    def writer(self, i: int) -> Client:
        raise NotImplementedError

    async def create(self, client: Client, name: str, probe: bool, deadline: float) -> int | None:
        """Creates one object; its revision, or None if refused."""
        raise NotImplementedError

    async def list_all(self, client: Client, deadline: float) -> int:
        """Lists every object, parsing the answer; how many there were."""
        raise NotImplementedError

    async def probe_list(self, client: Client, deadline: float) -> int:
        """The herd's first request (the probe, one item at most); the revision to watch from."""
        raise NotImplementedError

    def watch_request(self, revision: int, probe_only: bool) -> tuple[str, str, bytes]:
        raise NotImplementedError

    async def update_probe(self, client: Client, seq: int, deadline: float) -> int | None:
        raise NotImplementedError

    @staticmethod
    def revisions(line: bytes) -> list[int]:
        """The revisions of the events in one stream line (none for bookmarks and the like)."""
        raise NotImplementedError

    @staticmethod
    def refusal(line: bytes) -> str:
        """Why the server ended a watch, if this line says it did."""
        raise NotImplementedError

    def close(self) -> None:
        pass


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmHWM, VmRSS) of a process in MB; (nan, nan) once it is gone."""
    fields: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in {"VmHWM", "VmRSS"}:
                    fields[name] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return fields.get("VmHWM", float("nan")), fields.get("VmRSS", float("nan"))


@dataclass
class Writes:
    """Writes made while watchers listened: (start, revision) of each that succeeded."""

    done: list[tuple[float, int]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    failed: int = 0
    counters: Counters = field(default_factory=Counters)


@dataclass
class Creates:
    total: float
    latencies: list[float]
    failed: int
    counters: Counters


async def create_many(target: Target, names: list[str], inflight: int, probe: str = "") -> Creates:
    """Creates `names`, `inflight` at a time, worker k through writer k."""
    latencies: list[float] = []
    failed = 0
    queue = iter(names)

    async def worker(k: int) -> None:
        nonlocal failed
        client = target.writer(k)
        for name in queue:
            started = time.perf_counter()
            revision = await target.create(client, name, name == probe, started + REQUEST_SECONDS)
            latencies.append(time.perf_counter() - started)
            failed += revision is None

    began = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(inflight)))
    total = time.perf_counter() - began
    counters = Counters()
    for k in range(inflight):
        counters.add(target.writer(k).counters)
        target.writer(k).counters = Counters()
    return Creates(total, latencies, failed, counters)


async def list_all(target: Target, times: int) -> tuple[list[float], int]:
    """Full lists, one after another: each one's seconds, and the items in the last."""
    client = target.writer(0)
    seconds, items = [], 0
    for _ in range(times):
        started = time.perf_counter()
        items = await target.list_all(client, started + REQUEST_SECONDS)
        seconds.append(time.perf_counter() - started)
    return seconds, items


class Watcher:
    """One herd member: what it was answered, when it was watching, what its stream brought."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.receipts: dict[int, float] = {}
        self.watching: float | None = None  # seconds from the herd's start to the 200
        self.conn: Connection | None = None
        self.error = ""
        self.counters = Counters()
        self.streamed = 0  # bytes of stream lines received

    def sink(self, line: bytes, arrived: float) -> None:
        self.streamed += len(line) + 1
        revisions = self.target.revisions(line)
        if not revisions:
            self.error = self.error or self.target.refusal(line)
        for revision in revisions:
            self.receipts.setdefault(revision, arrived)

    @property
    def open(self) -> bool:
        return self.conn is not None and not self.conn.ended.done() and not self.error

    def ending(self) -> str:
        if self.error:
            return self.error
        if self.conn is not None and self.conn.ended.done():
            return self.conn.ended.result()
        return ""

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


@dataclass
class Herd:
    watchers: list[Watcher]
    counters: Counters
    seconds: float  # until the last member was watching or gave up

    @property
    def watching(self) -> list[float]:
        return [w.watching for w in self.watchers if w.watching is not None]

    @property
    def dropped(self) -> int:
        return sum(w.watching is None for w in self.watchers)

    def failures(self) -> dict[str, int]:
        why: dict[str, int] = {}
        for w in self.watchers:
            if w.watching is None:
                why[w.error or "?"] = why.get(w.error or "?", 0) + 1
        return why


async def herd(
    target: Target,
    count: int,
    deadline_seconds: float,
    probe_only: bool,
    *,
    revision: int | None = None,
    watcher_class: type[Watcher] = Watcher,
    members: Sequence[int] | None = None,
    began: float | None = None,
) -> Herd:
    """`count` clients at once, each its own: a list of the probe (limit 1), then a watch from
    that list's revision (or, given `revision`, only the watch, from there); a member not
    watching `deadline_seconds` after the start is dropped. A share of a herd spread over
    processes (`herd_spread`) names its `members` and the herd's start, `began`."""
    began = time.perf_counter() if began is None else began
    deadline = began + deadline_seconds

    async def member(i: int) -> Watcher:
        watcher = watcher_class(target)
        client = target.member(i)
        try:
            async with asyncio.timeout(deadline - time.perf_counter()):
                since = revision
                if since is None:
                    since = await target.probe_list(client, deadline)
                method, path, body = target.watch_request(since, probe_only)
                watcher.conn = await client.watch(method, path, watcher.sink, body, deadline)
                watcher.watching = time.perf_counter() - began
        except TimeoutError:
            watcher.error = f"not watching within {deadline_seconds:.0f} s"
        except (OSError, Closed, RuntimeError) as error:
            watcher.error = f"{type(error).__name__}: {str(error)[:120]}"
        watcher.counters = client.counters
        client.close()
        return watcher

    indices = range(count) if members is None else members
    watchers = await asyncio.gather(*(member(i) for i in indices))
    counters = Counters()
    for watcher in watchers:
        counters.add(watcher.counters)
    return Herd(list(watchers), counters, time.perf_counter() - began)


@dataclass
class Delivery:
    latencies: list[float]
    delivered: int
    expected: int
    watchers: int  # watching when the writes began
    writes: Writes
    endings: dict[str, int]  # streams that ended meanwhile, by how
    streamed: list[float]  # bytes each watcher's stream brought, start to now


def delivery(watchers: list[Watcher], writes: Writes) -> Delivery:
    live = [w for w in watchers if w.watching is not None]
    latencies = []
    for watcher in live:
        receipts = watcher.receipts
        for started, revision in writes.done:
            arrived = receipts.get(revision)
            if arrived is not None:
                latencies.append(arrived - started)
    endings: dict[str, int] = {}
    for watcher in live:
        if how := watcher.ending():
            endings[how[:120]] = endings.get(how[:120], 0) + 1
    streamed = [float(w.streamed) for w in live]
    return Delivery(
        latencies,
        len(latencies),
        len(live) * len(writes.done),
        len(live),
        writes,
        endings,
        streamed,
    )


async def settle(watchers: list[Watcher], writes: Writes, seconds: float) -> None:
    """Waits (at most `seconds`) until every open watcher has the last write."""
    if writes.done:
        await settle_at(watchers, max(revision for _started, revision in writes.done), seconds)


async def settle_at(watchers: Iterable[Watcher], last: int, seconds: float) -> None:
    """Waits (at most `seconds`) until every open watcher has revision `last`."""
    watchers = list(watchers)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        if all(last in w.receipts for w in watchers if w.open):
            return
        await asyncio.sleep(0.1)


async def update_events(target: Target, count: int, interval: float, first_seq: int) -> Writes:
    """`count` updates of the probe, one every `interval` s (or as soon as the last is done)."""
    writes = Writes()
    client = target.writer(0)
    began = time.perf_counter()
    for i in range(count):
        await asyncio.sleep(max(0.0, began + i * interval - time.perf_counter()))
        started = time.perf_counter()
        revision = await target.update_probe(client, first_seq + i, started + REQUEST_SECONDS)
        writes.latencies.append(time.perf_counter() - started)
        if revision is None:
            writes.failed += 1
        else:
            writes.done.append((started, revision))
    writes.counters, client.counters = client.counters, Counters()
    return writes


async def paced_creates(target: Target, names: list[str], rate: float, writers: int) -> Writes:
    """Creates of probe-labelled objects at `rate` per second, open loop (each on schedule,
    whatever the ones before it are doing), through `writers` clients in turn."""
    writes = Writes()
    began = time.perf_counter()

    async def one(i: int, name: str) -> None:
        await asyncio.sleep(max(0.0, began + i / rate - time.perf_counter()))
        started = time.perf_counter()
        revision = await target.create(
            target.writer(i % writers), name, True, started + REQUEST_SECONDS
        )
        writes.latencies.append(time.perf_counter() - started)
        if revision is None:
            writes.failed += 1
        else:
            writes.done.append((started, revision))

    await asyncio.gather(*(one(i, name) for i, name in enumerate(names)))
    for k in range(writers):
        writes.counters.add(target.writer(k).counters)
        target.writer(k).counters = Counters()
    return writes
