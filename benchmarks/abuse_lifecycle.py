"""The abuse rows that end or load a whole server: SIGTERM under 200 watches, and the controller.

The SIGTERM row ends the shared server twice and starts it again; the controller row gets a
server of its own (a fresh data dir with 2,000 runtimes), the only one with the embedded
controller on.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections import Counter
from pathlib import Path

from benchmarks import abuse_bodies as bodies
from benchmarks.abuse_http import get_status, send
from benchmarks.abuse_probe import Answer, AtLeast
from benchmarks.abuse_requests import Attacks
from benchmarks.abuse_server import HOST, AbuseServer
from benchmarks.abuse_watch import WatchHerd
from benchmarks.report import AbuseRow
from benchmarks.server import free_port

WATCHES = 200
PENDING_LISTS = 20
CONTROLLER_RUNTIMES = 2000


def _terminate(at: Attacks) -> Answer:
    seconds = at.server.terminate(at.bound)
    if seconds is None:
        return AtLeast(f"still running {at.bound:.0f} s after SIGTERM (then SIGKILL)", at.bound)
    assert at.server.process is not None
    return f"exited, code {at.server.process.returncode}", seconds


def _writes_until(at: Attacks, stop: threading.Event, acknowledged: list[str]) -> None:
    """POSTs one runtime after another until `stop`, keeping the names the server said 201 to."""
    with at.client("editor") as editor:
        for i in range(1000):
            if stop.is_set():
                return
            name = f"shutdown-{i:04d}"
            if send(editor, "POST", at.collection, json=bodies.runtime(name)).startswith("201"):
                acknowledged.append(name)
            elif not at.server.alive():
                return


def _pending_lists(at: Attacks, statuses: Counter[str]) -> threading.Thread:
    token, path = at.server.token("viewer"), at.collection

    async def lists() -> None:
        calls = [
            get_status(HOST, at.server.port, path, token, at.bound) for _ in range(PENDING_LISTS)
        ]
        statuses.update(await asyncio.gather(*calls))

    thread = threading.Thread(target=lambda: asyncio.run(lists()), daemon=True)
    thread.start()
    return thread


def _lost(at: Attacks, acknowledged: list[str]) -> str:
    """Starts the server again and counts the acknowledged writes it no longer has."""
    try:
        at.server.ensure_up()
    except RuntimeError as error:
        return f"could not start the server again to count lost writes: {error}"[:200]
    with at.client("admin") as admin:
        lost = [n for n in acknowledged if admin.get(f"{at.collection}/{n}").status_code != 200]
    return f"acknowledged writes lost: {len(lost)} of {len(acknowledged)}"


def sigterm(at: Attacks) -> list[AbuseRow]:
    """SIGTERM to an idle server, then to one holding 200 watches, lists and a write; then the
    server is started again, to count the acknowledged writes it lost (and for the rows after)."""
    server, bound = at.server, at.bound
    baseline = at.measure(
        "SIGTERM, idle", lambda: _terminate(at), bound + 15, livez=False, ends_server=True
    )
    server.ensure_up()
    # As informers watch: from the revision of a list, so a watch takes no list seat.
    with at.client("viewer") as viewer:
        revision = viewer.get(at.collection, params={"limit": "1"}).json()["metadata"]
    path = f"{at.collection}?watch=1&resourceVersion={revision['resourceVersion']}"
    watches = WatchHerd(HOST, server.port, path, server.user("viewer")["watchers"], WATCHES)
    statuses: Counter[str] = Counter()
    acknowledged: list[str] = []
    stop = threading.Event()
    try:
        opened = watches.open(seconds=20)
        writer = threading.Thread(target=_writes_until, args=(at, stop, acknowledged))
        writer.start()
        time.sleep(1.0)  # some writes acknowledged before the signal, one in flight at it
        lists = _pending_lists(at, statuses)
        time.sleep(0.2)
        attack = at.measure(
            f"SIGTERM, {opened} watches open",
            lambda: _terminate(at),
            bound + 15,
            livez=False,
            ends_server=True,
        )
        stop.set()
        writer.join(timeout=bound + 10)
        lists.join(timeout=bound + 10)
        time.sleep(0.5)  # the herd's readers see their streams end
        endings = Counter(watches.endings)
    finally:
        stop.set()
        watches.close()
    attack.extra.update(
        watches=f"watches: {opened} opened; ended: {dict(endings)}",
        lists=f"lists in flight at the signal: {dict(statuses)}",
        writes=_lost(at, acknowledged),
    )
    return [
        AbuseRow(
            f"SIGTERM with {WATCHES} open watches, lists and a write in flight",
            "the operator",
            attack,
            baseline,
            "exit within 10 s; no acknowledged write lost",
        )
    ]


def _api_timings(at: Attacks, seconds: float) -> dict[str, list[float]]:
    """A list of 50, a get and /livez, in turn, for `seconds` (at most 10,000 rounds)."""
    timings: dict[str, list[float]] = {"list": [], "get": [], "livez": []}
    deadline = time.monotonic() + seconds
    with at.client("viewer") as viewer:
        requests = {
            "list": (at.collection, {"limit": "50"}),
            "get": (f"{at.collection}/bulk-0001", {}),
            "livez": ("/livez", {}),
        }
        for _round in range(10_000):
            if time.monotonic() > deadline:
                break
            for kind, (url, params) in requests.items():
                started = time.perf_counter()
                if send(viewer, "GET", url, params=params).startswith("200"):
                    timings[kind].append(time.perf_counter() - started)
    return timings


def _p99(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def _summary(timings: dict[str, list[float]]) -> str:
    return ", ".join(
        f"{kind} p99 {_p99(values) * 1000:.0f} ms (n={len(values)})"
        for kind, values in timings.items()
    )


def _cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` in seconds (clock ticks of 1/100 s on Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / 100


def _verdicts(at: Attacks) -> dict[str, int]:
    """How many runtimes the controller has judged, by the Verified condition's reason."""
    reasons: Counter[str] = Counter()
    with at.client("admin") as admin:
        listed = admin.get(at.collection, params={"limit": "5000"})
    for item in listed.json().get("items", []) if listed.status_code == 200 else []:
        conditions = (item.get("status") or {}).get("conditions") or []
        verified = [c for c in conditions if c.get("type") == "Verified"]
        reasons[verified[0].get("reason", "?") if verified else "not yet judged"] += 1
    return dict(reasons)


def controller(bound: float, rss_cap_mb: float, seconds: float) -> list[AbuseRow]:
    """2,000 runtimes whose registry refuses every connection, with the embedded controller on."""
    registry = f"{HOST}:{free_port()}"  # nothing listens there
    image = f"{registry}/trainers/unreachable:1.0@sha256:" + "cd" * 32
    server = AbuseServer.fresh(
        runtimes=CONTROLLER_RUNTIMES, image=image, env={"NODUS_REGISTRY_ALLOW": registry}
    )
    at = Attacks(server, bound, rss_cap_mb)
    idle: dict[str, list[float]] = {}
    busy: dict[str, list[float]] = {}
    cpu: list[float] = []

    def measure_idle() -> Answer:
        idle.update(_api_timings(at, min(seconds, 20)))
        p99 = _p99(idle["list"] + idle["get"])
        return "controller off", p99

    def measure_busy() -> Answer:
        before = _cpu_seconds(server.pid)
        started = time.perf_counter()
        busy.update(_api_timings(at, seconds))
        cpu.append((_cpu_seconds(server.pid) - before) / (time.perf_counter() - started))
        return "controller on", _p99(busy["list"] + busy["get"])

    try:
        server.start()
        baseline = at.measure("API p99, same runtimes, controller off", measure_idle, bound=60)
        server.stop()
        server.controller = True
        server.start()
        attack = at.measure("API p99", measure_busy, bound=seconds + 30)
        judged = _verdicts(at)
        attack.extra.update(
            busy=f"controller on: {_summary(busy)}",
            idle=f"controller off: {_summary(idle)}",
            cpu=f"server CPU while on: {cpu[0] if cpu else float('nan'):.2f} cores",
            judged=f"runtimes by Verified reason after {seconds:.0f} s: {judged}",
        )
        return [
            AbuseRow(
                f"{CONTROLLER_RUNTIMES} runtimes, registry refusing connections, controller on",
                "any editor (creates runtimes)",
                attack,
                baseline,
                "API p99 within 2x idle",
                ["time is the p99 of the API's lists and gets; the ratio is busy over idle"],
            )
        ]
    finally:
        server.remove()
