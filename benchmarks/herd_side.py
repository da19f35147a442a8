"""One side of the herd case: every load, in order, against one target, with /livez polled
beside it and the server's memory read between loads."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.herd_loads import (
    Creates,
    Delivery,
    Herd,
    Settings,
    Target,
    Writes,
    create_many,
    delivery,
    herd,
    list_all,
    paced_creates,
    rss_mb,
    settle,
    update_events,
)
from benchmarks.herd_spread import Spread

ROOT = Path(__file__).resolve().parent.parent
CUT = b"client stopped reading"  # runtimes/api/serving.py's warning when it cuts a watcher
CLOSE_PAUSE = 2.0  # after closing a herd, before the next: the server lets go of the seats


def log(message: str) -> None:
    print(f"[herd] {message}", file=sys.stderr, flush=True)


@dataclass
class Side:
    """Everything one target's run measured."""

    name: str
    version: str = ""
    server_log: Path | None = None  # where the server logs its slow-reader cuts
    phases: dict[str, tuple[float, float]] = field(default_factory=dict)  # epoch windows
    health: list[tuple[float, float, str]] = field(default_factory=list)  # (epoch, s, status)
    rss: dict[str, tuple[float, float]] = field(default_factory=dict)  # (VmHWM, VmRSS) MB
    loadavg: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    overflows: dict[str, int] = field(default_factory=dict)  # listen queue overflows per load
    # Per load: the kernel's TCP aborts (resets it sent, by cause; nonzero ones only) and the
    # server's own cuts of watchers that stopped reading, so a stream lost to a reset is named.
    aborts: dict[str, dict[str, int]] = field(default_factory=dict)
    cuts: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, tuple[float, float]] = field(default_factory=dict)  # (server, client) cores
    creates: Creates | None = None
    lists: list[float] = field(default_factory=list)
    listed: int = 0
    herd: Herd | None = None
    delivery: Delivery | None = None
    paced: Delivery | None = None
    herd_big: Herd | None = None
    delivery_big: Delivery | None = None
    big_creates: Creates | None = None
    big_lists: list[float] = field(default_factory=list)
    big_listed: int = 0
    big_open: int = 0  # load 5's watchers still open when load 7 read the memory
    helpers: list[int] = field(default_factory=list)  # the herd's client processes

    @contextmanager
    def phase(self, name: str, pid: int) -> Iterator[None]:
        log(f"{self.name}: {name} ...")
        began, tcp, cuts = time.time(), tcp_counters(), self.target_cuts()
        server, client = cpu_seconds(pid), self.client_cpu()
        try:
            yield
        finally:
            ended = time.time()
            self.phases[name] = (began, ended)
            now = tcp_counters()
            self.overflows[name] = now.get("ListenOverflows", 0) - tcp.get("ListenOverflows", 0)
            self.aborts[name] = {
                k: now[k] - tcp.get(k, 0) for k in now if k in ABORTS and now[k] > tcp.get(k, 0)
            }
            self.cuts[name] = self.target_cuts() - cuts
            wall = max(ended - began, 1e-9)
            self.cpu[name] = (
                (cpu_seconds(pid) - server) / wall,
                (self.client_cpu() - client) / wall,
            )
            self.rss[name] = rss_mb(pid)
            log(f"{self.name}: {name} done in {time.time() - began:.1f} s")

    def client_cpu(self) -> float:
        """CPU seconds of the load generator so far: this process and its herd processes."""
        return time.process_time() + sum(cpu_seconds(pid) for pid in self.helpers)

    def target_cuts(self) -> int:
        """The watchers the server has cut off so far for not reading (its log says each)."""
        if self.server_log is None or not self.server_log.exists():
            return 0
        with self.server_log.open("rb") as lines:
            return sum(CUT in line for line in lines)

    def health_in(self, phase: str) -> list[tuple[float, str]]:
        began, ended = self.phases.get(phase, (0.0, 0.0))
        return [(s, status) for at, s, status in self.health if began <= at <= ended]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process so far (its threads included)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


# The kernel's reasons for sending a reset (`nstat`'s TcpExt counters): a closed socket with
# unread data, data after close, memory pressure, a timeout, a zero linger (an abort, as the
# server's slow-reader cut does), or a reset that could not be sent.
ABORTS = (
    "TCPAbortOnData",
    "TCPAbortOnClose",
    "TCPAbortOnMemory",
    "TCPAbortOnTimeout",
    "TCPAbortOnLinger",
    "TCPAbortFailed",
)


def tcp_counters() -> dict[str, int]:
    """The kernel's TcpExt counters (all sockets on the machine: on loopback, the server's and
    the load generator's both): ListenOverflows counts connections refused for a full accept
    queue (the server's backlog is the one a herd fills), ABORTS the resets and why."""
    try:
        with open("/proc/net/netstat") as netstat:
            lines = [line.split() for line in netstat if line.startswith("TcpExt:")]
        return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:], strict=True)}
    except (OSError, IndexError, ValueError):
        return {}


@contextmanager
def polling(target: Target, side: Side, work: Path) -> Iterator[None]:
    """The health poller (benchmarks/herd_livez.py) for the duration; its samples into side."""
    out = work / f"health-{target.name.split()[0]}.txt"
    out.unlink(missing_ok=True)
    poller = subprocess.Popen(
        [
            *(sys.executable, "-m", "benchmarks.herd_livez"),
            *(target.host, str(target.port), target.health_path, str(out)),
        ],
        cwd=ROOT,
    )
    try:
        yield
    finally:
        poller.terminate()
        poller.wait(timeout=10)
        for line in out.read_text().splitlines() if out.exists() else []:
            at, seconds, status = line.split(" ", 2)
            side.health.append((float(at), float(seconds), status))


def close(watchers: Herd | None) -> None:
    for watcher in watchers.watchers if watchers else []:
        watcher.close()


class Herds:
    """Opens, settles and closes the herds: in this process, or spread over client processes
    (`herd_spread`, BENCH_HERD_PROCESSES > 1) so that one client process is not the bound."""

    def __init__(self, target: Target, spread: Spread | None) -> None:
        self.target, self.spread = target, spread

    async def open(self, count: int, deadline: float, probe_only: bool) -> Herd:
        if self.spread is not None:
            return await self.spread.herd(count, deadline, probe_only)
        return await herd(self.target, count, deadline, probe_only=probe_only)

    async def settle(self, opened: Herd, writes: Writes, seconds: float) -> Delivery:
        """Waits until every open member has the last write (at most `seconds`); the delivery."""
        if self.spread is not None:
            last = max((revision for _started, revision in writes.done), default=None)
            await self.spread.settle(last, seconds)
        else:
            await settle(opened.watchers, writes, seconds)
        return delivery(opened.watchers, writes)

    async def still_open(self, opened: Herd) -> int:
        if self.spread is not None:
            await self.spread.settle(None, 0.0)
        return sum(w.open for w in opened.watchers)

    async def close(self, opened: Herd | None) -> None:
        if self.spread is not None:
            await self.spread.close()
        else:
            close(opened)


async def _loads(target: Target, s: Settings, side: Side, herds: Herds) -> None:
    pid = target.pid
    names = [f"herd-{i:05d}" for i in range(s.objects)]
    with side.phase("creates", pid):
        side.creates = await create_many(target, names, s.inflight, probe=target.probe_name)
    with side.phase("list", pid):
        side.lists, side.listed = await list_all(target, s.lists)
    with side.phase("herd", pid):
        side.herd = await herds.open(s.clients, s.deadline, probe_only=False)
    log(f"{side.name}: {len(side.herd.watching)} watching, {side.herd.dropped} dropped")
    try:
        with side.phase("delivery", pid):
            writes = await update_events(target, s.events, s.interval, first_seq=0)
            side.delivery = await herds.settle(side.herd, writes, s.wait)
        paced = [f"herd-paced-{i:05d}" for i in range(round(s.rate * s.rate_seconds))]
        with side.phase("paced creates", pid):
            writes = await paced_creates(target, paced, s.rate, s.inflight)
            side.paced = await herds.settle(side.herd, writes, s.wait)
    finally:
        await herds.close(side.herd)
    await asyncio.sleep(CLOSE_PAUSE)
    try:
        with side.phase("herd of many", pid):
            side.herd_big = await herds.open(s.watchers, s.deadline, probe_only=True)
        log(f"{side.name}: {len(side.herd_big.watching)} watching, {side.herd_big.dropped} dropped")
        with side.phase("delivery to many", pid):
            writes = await update_events(target, s.events, s.interval, first_seq=s.events)
            side.delivery_big = await herds.settle(side.herd_big, writes, s.wait)
        if s.big:
            more = max(0, s.big_objects - s.objects - len(paced))
            with side.phase("big", pid):
                bulk = [f"herd-big-{i:05d}" for i in range(more)]
                side.big_creates = await create_many(target, bulk, s.inflight)
                side.big_lists, side.big_listed = await list_all(target, 1)
                side.big_open = await herds.still_open(side.herd_big)
    finally:
        await herds.close(side.herd_big)
        target.close()  # the writers' kept-alive connections, while their loop still runs


def run(target: Target, s: Settings, work: Path) -> Side:
    side = Side(target.name, server_log=target.server_log)
    target.size = s.size
    side.loadavg["before"] = os.getloadavg()
    # Forked before this side's event loop starts, while the target has no connection open.
    spread = Spread(target, s.processes) if s.processes > 1 else None
    side.helpers = [p.pid for p in spread.processes if p.pid] if spread else []
    try:
        with polling(target, side, work):
            asyncio.run(_loads(target, s, side, Herds(target, spread)))
    finally:
        if spread is not None:
            spread.stop()
    side.loadavg["after"] = os.getloadavg()
    side.rss["end"] = rss_mb(target.pid)
    return side
