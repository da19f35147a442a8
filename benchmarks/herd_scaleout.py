"""herd-scaleout: the issue's scale-out target, measured. Runs only when named:

    .venv/bin/python benchmarks/run.py herd-scaleout          # a few minutes at the defaults
    BENCH_SCALEOUT_WATCHERS=300 BENCH_SCALEOUT_BASE=100 .venv/bin/python benchmarks/run.py \\
        herd-scaleout                                          # a quick look

The target: "4 workers on PostgreSQL + Redis: 10,000 watchers, delivery p99 ≤ 1 s, no event
lost or duplicated". A fresh PostgreSQL database and a Redis database of its own; the herd's
seeding (admin, demo project, one token per 100 watchers: the server's per-client watch limit,
and 8 writer tokens); then `manage.py serve --no-seed --workers 4` on free ports, the workers
being the pids `ss` shows listening on the HTTP port (`benchmarks/herd_scaleout_server.py`).
Through that ONE port: [200] runtimes of [4,096] B are created (one, herd-00000, labelled
bench=probe); then, twice, a herd opens at once (first [1,000] watchers, the baseline; then
[10,000]): one list of the probe gives the resourceVersion every member watches from, with
bookmarks, as an informer would; the kernel spreads the connections over the workers; 429s are
honoured by sleeping Retry-After as client-go does, and counted; a member not watching within
[120] s gives up. Then [20] updates of the probe through the same port, one every [100] ms
or, when one takes longer, as soon as it is answered (`herd_loads.update_events`); each
watcher's receipt of each is timed from the write's start (`herd_http` stamps the bytes'
arrival). Reported: how long until all were watching and how many never were; delivered /
expected; any revision twice on one watcher (duplicated), out of order, or missing (lost);
delivery p50 / p99 / max; /livez p99 (polled every 100 ms on the shared port by another
process, `herd_livez`); each worker's RSS peak (VmHWM); the load average; the cores the
workers and the load generator kept busy (its own from /proc/self/stat: one asyncio process
cannot use more than one core, so near 1 it, not the server, sets the pace) and its event
loop's lag. Both herds are served by the same server, so the ratio shows how delivery scales
from 1,000 to 10,000 watchers. The case is registered in `herd`; its figures, its verdict on
the target and its results file are in `report`. Nothing here asserts on time.

Counts: BENCH_SCALEOUT_<NAME> for each field of `Settings`. The server's default of 1,000 open
watches per worker process (NODUS_MAX_WATCHES_INFLIGHT) would cap 4 workers at 4,000 watches,
so the workers run with enough for WATCHERS spread by the kernel over WORKERS (a fifth more
than an even share, at least 1,000); BENCH_SCALEOUT_WATCHES_PER_WORKER sets it (1000: the
server's default).
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import herd_side
from benchmarks.herd_loads import (
    REQUEST_SECONDS,
    Delivery,
    Herd,
    Watcher,
    create_many,
    delivery,
    herd,
    rss_mb,
    settle,
    update_events,
)
from benchmarks.herd_nodus import Nodus
from benchmarks.herd_scaleout_server import Cluster, accepted, connections, logged, serving

PER_TOKEN = 100  # watches per token, as many informers sharing one service account
WRITERS = 8  # tokens that create the runtimes, 8 in flight (the per-client "other" seats)
CLOSE_PAUSE = 3.0  # after closing the baseline herd: the workers let go of the seats
LATE = 1.0  # after the last write has arrived everywhere: time for a duplicate to show
LAG_EVERY = 0.01  # the load generator's event-loop lag probe


@dataclass(frozen=True)
class Settings:
    """Every count of the case; `settings()` reads them from BENCH_SCALEOUT_<NAME>."""

    watchers: int = 10000  # the herd the target names
    base: int = 1000  # the baseline herd, on the same server first
    events: int = 20  # updates of the probe, one every INTERVAL s, to each herd
    interval: float = 0.1
    workers: int = 4
    objects: int = 200  # runtimes created before the herds (the probe among them)
    size: int = 4096  # bytes of each runtime's JSON
    deadline: float = 120  # a member not watching this long after the herd's start gives up
    wait: float = 30  # how long deliveries may trail the last write
    watches_per_worker: int = 0  # NODUS_MAX_WATCHES_INFLIGHT; 0: enough for WATCHERS

    @property
    def watch_seats(self) -> int:
        if self.watches_per_worker:
            return self.watches_per_worker
        share = math.ceil(self.watchers * 1.2 / max(self.workers, 1) / 100) * 100
        return max(1000, share)


def settings() -> Settings:
    values: dict[str, object] = {}
    for name, kind in Settings.__annotations__.items():
        raw = os.environ.get(f"BENCH_SCALEOUT_{name.upper()}")
        if raw is not None:
            values[name] = int(raw) if kind == "int" else float(raw)
    return Settings(**values)  # type: ignore[arg-type]


def log(message: str) -> None:
    print(f"[herd-scaleout {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Counted(Watcher):
    """A watcher that also counts a revision it was sent twice, or after a later one."""

    def __init__(self, target: Nodus) -> None:
        super().__init__(target)
        self.duplicates = 0
        self.disordered = 0
        self.last = 0
        self.worker = 0  # the pid of the worker serving the stream

    def local_port(self) -> int:
        transport = self.conn.transport if self.conn is not None else None
        sockname = transport.get_extra_info("sockname") if transport is not None else None
        return int(sockname[1]) if sockname else 0

    def sink(self, line: bytes, arrived: float) -> None:
        revisions = Nodus.revisions(line)
        if not revisions:
            self.error = self.error or Nodus.refusal(line)
        for revision in revisions:
            if revision in self.receipts:
                self.duplicates += 1
            else:
                self.receipts[revision] = arrived
            if revision < self.last:
                self.disordered += 1
            self.last = max(self.last, revision)


@dataclass
class Phase:
    began: float  # epoch, for the health samples
    ended: float
    workers_cores: float  # CPU seconds of the workers / wall seconds
    client_cores: float  # the same for this process (/proc/self/stat)
    lag: list[float]  # the event loop's lag, seconds, sampled every LAG_EVERY
    overflows: int  # SYNs the kernel dropped for a full accept queue
    loadavg: tuple[float, float, float]  # at its end


@dataclass
class HerdRun:
    """One herd: opening it, the updates delivered to it, the workers afterwards."""

    count: int
    herd: Herd | None = None
    delivered: Delivery | None = None
    spread: dict[int, int] = field(default_factory=dict)  # connections per worker pid
    by_worker: dict[int, list[float]] = field(default_factory=dict)  # delivery latencies
    writer_worker: int = 0  # the pid of the worker that took the updates
    rss: dict[int, tuple[float, float]] = field(default_factory=dict)  # (VmHWM, VmRSS) MB
    duplicates: int = 0
    disordered: int = 0
    lost: int = 0  # expected receipts that never came, on streams still open
    cut: int = 0  # the same, on streams that ended
    per_write: list[tuple[float, float]] = field(default_factory=list)  # (first, last) receipt

    def open_phase(self) -> str:
        return f"open {self.count}"

    def delivery_phase(self) -> str:
        return f"deliver to {self.count}"


@dataclass
class Run:
    settings: Settings
    began: float
    workers: list[int] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    side: herd_side.Side = field(default_factory=lambda: herd_side.Side("nodus"))
    phases: dict[str, Phase] = field(default_factory=dict)
    loadavg_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    loadavg_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    nofile: str = ""
    created: int = 0
    create_failed: int = 0
    base: HerdRun | None = None
    big: HerdRun | None = None
    error: str = ""  # what stopped the run early, if anything
    lags: list[tuple[float, float]] = field(default_factory=list)  # (perf_counter, lag)
    logged: list[tuple[float, str]] = field(default_factory=list)  # the server's warnings


def raise_nofile(need: int) -> str:
    """RLIMIT_NOFILE's soft limit up to `need` if it is lower and the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return f"open files: soft limit {soft:,} (needs about {need:,})"
    wanted = need if hard == resource.RLIM_INFINITY else min(need, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    short = f"; short of the {need:,} needed: the hard limit" if wanted < need else ""
    return f"open files: soft limit raised from {soft:,} to {wanted:,}{short}"


def _workers_cpu(pids: list[int]) -> float:
    return sum(herd_side.cpu_seconds(pid) for pid in pids)


@contextmanager
def phase(run: Run, name: str) -> Iterator[None]:
    log(f"{name} ...")
    began, perf = time.time(), time.perf_counter()
    overflows = herd_side.tcp_counters().get("ListenOverflows", 0)
    workers, client = _workers_cpu(run.workers), herd_side.cpu_seconds(os.getpid())
    try:
        yield
    finally:
        ended, wall = time.time(), max(time.perf_counter() - perf, 1e-9)
        run.side.phases[name] = (began, ended)
        run.phases[name] = Phase(
            began,
            ended,
            (_workers_cpu(run.workers) - workers) / wall,
            (herd_side.cpu_seconds(os.getpid()) - client) / wall,
            [lag for at, lag in run.lags if at >= perf],
            herd_side.tcp_counters().get("ListenOverflows", 0) - overflows,
            os.getloadavg(),
        )
        log(f"{name} done in {ended - began:.1f} s")


async def _lag_probe(run: Run) -> None:
    """How late the event loop wakes a LAG_EVERY sleep: what a receipt's timestamp may trail."""
    while True:
        asked = time.perf_counter()
        await asyncio.sleep(LAG_EVERY)
        woke = time.perf_counter()
        run.lags.append((woke, max(0.0, woke - asked - LAG_EVERY)))


async def open_herd(target: Nodus, count: int, deadline_seconds: float) -> Herd:
    """`count` watches at once through the one port, every one from one list's resourceVersion
    and each on its member's token; a member not watching within `deadline_seconds` gives up."""
    revision = await target.probe_list(target.writer(0), time.perf_counter() + REQUEST_SECONDS)
    return await herd(
        target, count, deadline_seconds, probe_only=True, revision=revision, watcher_class=Counted
    )


def _tally(one: HerdRun) -> None:
    """Duplicates, disorder and losses of a delivered herd; each write's first and last receipt."""
    assert one.herd is not None
    assert one.delivered is not None
    done = one.delivered.writes.done
    live = [w for w in one.herd.watchers if w.watching is not None]
    for watcher in live:
        assert isinstance(watcher, Counted)
        got = [watcher.receipts[rev] - at for at, rev in done if rev in watcher.receipts]
        one.by_worker.setdefault(watcher.worker, []).extend(got)
        one.duplicates += watcher.duplicates
        one.disordered += watcher.disordered
        missing = sum(revision not in watcher.receipts for _started, revision in done)
        if watcher.open:
            one.lost += missing
        else:
            one.cut += missing
    for started, revision in done:
        got = [w.receipts[revision] for w in live if revision in w.receipts]
        if got:
            one.per_write.append((min(got) - started, max(got) - started))


async def _herd(run: Run, target: Nodus, cluster: Cluster, one: HerdRun, first_seq: int) -> None:
    s = run.settings
    try:
        with phase(run, one.open_phase()):
            one.herd = await open_herd(target, one.count, s.deadline)
        held = accepted(cluster.port)
        one.spread = connections(held)
        for watcher in one.herd.watchers:
            if isinstance(watcher, Counted) and watcher.conn is not None:
                watcher.worker = held.get(watcher.local_port(), 0)
        log(f"{len(one.herd.watching):,} watching, {one.herd.dropped:,} not; spread {one.spread}")
        with phase(run, one.delivery_phase()):
            writes = await update_events(target, s.events, s.interval, first_seq)
            await settle(one.herd.watchers, writes, s.wait)
            await asyncio.sleep(LATE)
            one.delivered = delivery(one.herd.watchers, writes)
        held = accepted(cluster.port)
        ports = [
            int(c.transport.get_extra_info("sockname")[1])
            for c in target.writer(0).idle
            if c.transport is not None and not c.closed
        ]
        one.writer_worker = next((held[port] for port in ports if port in held), 0)
        _tally(one)
        one.rss = {pid: rss_mb(pid) for pid in run.workers}
    finally:
        for watcher in one.herd.watchers if one.herd else []:
            watcher.close()


async def _loads(run: Run, target: Nodus, cluster: Cluster) -> None:
    s = run.settings
    lag = asyncio.create_task(_lag_probe(run))
    try:
        names = [f"herd-{i:05d}" for i in range(s.objects)]
        with phase(run, "create runtimes"):
            made = await create_many(target, names, WRITERS, probe=target.probe_name)
        run.created, run.create_failed = len(made.latencies) - made.failed, made.failed
        run.base = HerdRun(s.base)
        await _herd(run, target, cluster, run.base, first_seq=0)
        await asyncio.sleep(CLOSE_PAUSE)
        run.big = HerdRun(s.watchers)
        await _herd(run, target, cluster, run.big, first_seq=s.events)
    finally:
        lag.cancel()
        target.close()


def measure(s: Settings, work: Path) -> Run:
    run = Run(s, time.time())
    run.nofile = raise_nofile(max(s.watchers, s.base) + 512)
    members = max(1, math.ceil(max(s.watchers, s.base) / PER_TOKEN))
    run.loadavg_before = os.getloadavg()
    try:
        with serving(s.workers, members, WRITERS, s.watch_seats, log) as cluster:
            run.workers, run.versions = cluster.workers, cluster.versions
            target = Nodus("127.0.0.1", cluster.port, cluster.parent.pid, cluster.seeded)
            target.size = s.size
            with herd_side.polling(target, run.side, work):
                asyncio.run(_loads(run, target, cluster))
    except Exception as error:  # the figures so far still print, with what stopped the run
        run.error = f"{type(error).__name__}: {str(error)[:600]}"
        log(f"stopped early: {run.error}")
    run.logged = logged()
    run.loadavg_after = os.getloadavg()
    return run
