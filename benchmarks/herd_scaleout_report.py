"""The herd-scaleout case (`scaleout.measure` runs it) and its figures: the verdict on the
target, the printed summary, the harness's Comparisons and the results file."""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import herd_scaleout as scaleout
from benchmarks.harness import Bench, Comparison, case, write_results
from benchmarks.herd_report import counted, ms, p, timings
from benchmarks.herd_scaleout import HerdRun, Phase, Run

NAN = float("nan")
TARGET_WATCHERS, TARGET_WORKERS, TARGET_P99 = 10000, 4, 1.0
BUSY = 0.85  # of its one core: past this the load generator, not the server, sets the pace


def latencies(one: HerdRun | None) -> list[float]:
    return one.delivered.latencies if one is not None and one.delivered is not None else []


def watching(one: HerdRun | None) -> list[float]:
    return one.herd.watching if one is not None and one.herd is not None else []


def verdict(run: Run) -> tuple[bool, list[str]]:
    """Whether the target was met, and why not (each reason a phrase)."""
    big, why = run.big, []
    if run.error:
        why.append(f"the run stopped early ({run.error[:200]})")
    if big is None or big.herd is None or big.delivered is None:
        why.append(f"delivery to {run.settings.watchers:,} watchers was not measured")
        return False, why
    if big.herd.dropped:
        why.append(f"{big.herd.dropped:,} of {big.count:,} watchers never watching")
    if big.delivered.writes.failed:
        why.append(f"{big.delivered.writes.failed} of the updates failed")
    p99 = p(latencies(big), 99)
    if math.isnan(p99) or p99 > TARGET_P99:
        why.append(f"delivery p99 {ms(p99)} ms > {TARGET_P99 * 1000:,.0f} ms")
    if big.lost or big.cut:
        why.append(f"{big.lost + big.cut:,} events lost")
    if big.duplicates:
        why.append(f"{big.duplicates:,} events duplicated")
    return not why, why


def verdict_line(run: Run) -> str:
    s = run.settings
    met, why = verdict(run)
    text = (
        f"TARGET {'MET' if met else 'MISSED'}: {s.workers} workers on PostgreSQL + Redis, "
        f"{s.watchers:,} watchers, delivery p99 ≤ 1 s, no event lost or duplicated"
    )
    if why:
        text += " (" + "; ".join(why) + ")"
    if s.watchers != TARGET_WATCHERS or s.workers != TARGET_WORKERS:
        text += (
            f" [judged at {s.watchers:,} watchers on {s.workers} workers: the target names "
            f"{TARGET_WATCHERS:,} on {TARGET_WORKERS}]"
        )
    return text


def _phase(run: Run, name: str) -> Phase | None:
    return run.phases.get(name)


def _cores(phase: Phase | None) -> str:
    if phase is None:
        return "-"
    return f"{phase.workers_cores:.2f} + {phase.client_cores:.2f}"


def _lag(phase: Phase | None) -> str:
    if phase is None or not phase.lag:
        return "-"
    return f"{ms(p(phase.lag, 99))} / {ms(max(phase.lag))}"


def bottleneck(run: Run) -> str:
    """Whether the load generator (one asyncio process: one core at most) or the machine, rather
    than the server, set the pace of the big herd's phases."""
    cpus = os.cpu_count() or 1
    said = []
    for one in [run.big] if run.big else []:
        for name in (one.open_phase(), one.delivery_phase()):
            ph = _phase(run, name)
            if ph is None:
                continue
            lag = f"event-loop lag p99 {ms(p(ph.lag, 99))} ms" if ph.lag else "no lag samples"
            busy = f"{ph.client_cores:.2f} of a core, the workers {ph.workers_cores:.2f} cores"
            if ph.client_cores >= BUSY:
                said.append(
                    f"{name}: THE LOAD GENERATOR WAS THE BOTTLENECK ({busy}; {lag}): its own "
                    "queueing is in these figures, which overstate the server's"
                )
            elif ph.client_cores + ph.workers_cores >= 0.9 * cpus:
                said.append(
                    f"{name}: the machine's {cpus} cores were saturated ({busy}; {lag}): the "
                    "load generator took its share of them from the workers"
                )
            else:
                said.append(f"{name}: the load generator was not the bottleneck ({busy}; {lag})")
    return "; ".join(said) if said else "no phase measured"


def _health(run: Run, one: HerdRun | None, name: str) -> str:
    if one is None:
        return "-"
    samples = run.side.health_in(name)
    if not samples:
        return "no polls"
    seconds = [s for s, _status in samples]
    bad = sum(status != "200" for _s, status in samples)
    failed = f", {bad} failed" if bad else ""
    return f"{ms(p(seconds, 99))} (max {ms(max(seconds))}, {len(samples)} polls{failed})"


def _opened(one: HerdRun | None) -> str:
    if one is None or one.herd is None:
        return "-"
    h = one.herd
    text = f"{len(h.watching):,} of {one.count:,}; {h.dropped:,} never"
    if h.dropped:
        text += " (" + ", ".join(f"{why}: {n:,}" for why, n in h.failures().items()) + ")"
    return text


def _all_in(one: HerdRun | None) -> str:
    seen = watching(one)
    if not seen:
        return "-"
    last = f"{max(seen):,.1f} s" if one and one.herd and not one.herd.dropped else "not all"
    return f"{last}; p50 {ms(p(seen, 50))} / p99 {ms(p(seen, 99))} ms"


def _spread(one: HerdRun | None, workers: list[int]) -> str:
    if one is None or not one.spread:
        return "-"
    return " / ".join(f"{one.spread.get(pid, 0):,}" for pid in workers)


def _per_worker(one: HerdRun | None, workers: list[int]) -> str:
    if one is None or not one.by_worker:
        return "-"
    shown = []
    for pid in workers:
        values = one.by_worker.get(pid, [])
        mark = "*" if pid == one.writer_worker else ""
        shown.append(f"{ms(p(values, 50))} / {ms(p(values, 99))}{mark}" if values else "-")
    return ", ".join(shown)


def _delivered(one: HerdRun | None) -> str:
    if one is None or one.delivered is None:
        return "-"
    d = one.delivered
    text = f"{d.delivered:,} / {d.expected:,}"
    if d.writes.failed:
        text += f" ({d.writes.failed} updates failed)"
    return text


def _faults(one: HerdRun | None) -> str:
    if one is None or one.delivered is None:
        return "-"
    text = (
        f"{one.lost + one.cut:,} lost, {one.duplicates:,} duplicated, "
        f"{one.disordered:,} out of order"
    )
    if one.cut:
        text += f" ({one.cut:,} of the lost on streams that ended)"
    if one.delivered.endings:
        ended = ", ".join(f"{k}: {v}" for k, v in one.delivered.endings.items())
        text += f"; streams ended: {ended}"
    return text


def _spread_ms(one: HerdRun | None, pick: int) -> str:
    if one is None or not one.per_write:
        return "-"
    values = [pair[pick] for pair in one.per_write]
    return f"{ms(p(values, 50))} / {ms(max(values))}"


def _delivery(one: HerdRun | None) -> str:
    values = latencies(one)
    if not values:
        return "-"
    return f"{ms(p(values, 50))} / {ms(p(values, 99))} / {ms(max(values))}"


def _writes(one: HerdRun | None) -> str:
    if one is None or one.delivered is None or not one.delivered.writes.latencies:
        return "-"
    w = one.delivered.writes.latencies
    return f"{ms(p(w, 50))} / {ms(p(w, 99))}"


def _rss(one: HerdRun | None, workers: list[int]) -> str:
    if one is None or not one.rss:
        return "-"
    peaks = [one.rss.get(pid, (NAN, NAN))[0] for pid in workers]
    return " / ".join(f"{v:,.0f}" for v in peaks) + f" (sum {sum(peaks):,.0f})"


def _ratio(big: list[float], base: list[float], q: int) -> str:
    a, b = p(big, q), p(base, q)
    return "-" if math.isnan(a) or math.isnan(b) or not b else f"{a / b:.1f}x"


def _avg(values: tuple[float, float, float] | None) -> str:
    return "/".join(f"{v:.2f}" for v in values) if values else "-"


Cell = Callable[[HerdRun | None], str]


def table(run: Run) -> list[str]:
    big, base, w = run.big, run.base, run.workers

    def row(figure: str, cell: Cell, ratio: str = "-") -> str:
        return f"| {figure} | {cell(big)} | {cell(base)} | {ratio} |"

    def during(which: str, pick: Callable[[Phase | None], str]) -> Cell:
        def cell(one: HerdRun | None) -> str:
            if one is None:
                return "-"
            return pick(_phase(run, one.open_phase() if which == "open" else one.delivery_phase()))

        return cell

    def health(which: str) -> Cell:
        def cell(one: HerdRun | None) -> str:
            if one is None:
                return "-"
            name = one.open_phase() if which == "open" else one.delivery_phase()
            return _health(run, one, name)

        return cell

    def retries(one: HerdRun | None) -> str:
        return counted(one.herd.counters) if one is not None and one.herd is not None else "-"

    def overflows(ph: Phase | None) -> str:
        return str(ph.overflows) if ph is not None else "-"

    def loadavg(ph: Phase | None) -> str:
        return _avg(ph.loadavg) if ph is not None else "-"

    lat_big, lat_base = latencies(big), latencies(base)
    return [
        f"| figure | {run.settings.watchers:,} watchers | {run.settings.base:,} watchers "
        "(baseline) | ratio |",
        "|---|---|---|---|",
        row("watching within the deadline", _opened),
        row(
            "start to watching: all in after; p50 / p99",
            _all_in,
            _ratio(watching(big), watching(base), 50) + " p50",
        ),
        row("429 retries, other answers", retries),
        row("accept queue overflows while opening", during("open", overflows)),
        row(
            "connections per worker (`ss`; the watches and a few others)",
            lambda one: _spread(one, w),
        ),
        row("events delivered / expected", _delivered),
        row("lost, duplicated, out of order", _faults),
        row(
            "delivery ms, write start to receipt: p50 / p99 / max",
            _delivery,
            f"{_ratio(lat_big, lat_base, 50)} p50, {_ratio(lat_big, lat_base, 99)} p99",
        ),
        row(
            "delivery ms per worker, p50 / p99 (* the worker that took the updates)",
            lambda one: _per_worker(one, w),
        ),
        row("per update, first receipt ms: p50 / max", lambda one: _spread_ms(one, 0)),
        row("per update, last receipt ms: p50 / max", lambda one: _spread_ms(one, 1)),
        row("update (PATCH) ms: p50 / p99", _writes),
        row("/livez p99 ms while opening", health("open")),
        row("/livez p99 ms during delivery", health("deliver")),
        row("cores busy while opening: workers + load generator", during("open", _cores)),
        row("cores busy during delivery: workers + load generator", during("deliver", _cores)),
        row(
            "load generator's event-loop lag ms during delivery: p99 / max", during("deliver", _lag)
        ),
        row("worker RSS peak (VmHWM) MB after delivery, each", lambda one: _rss(one, w)),
        row("load average (1/5/15 min) after delivery", during("deliver", loadavg)),
    ]


def header(run: Run) -> list[str]:
    s = run.settings
    minutes = (time.time() - run.began) / 60
    when = datetime.fromtimestamp(run.began, UTC)
    pg, rd = run.versions.get("postgres", "?"), run.versions.get("redis", "?")
    default = " (the server's default)" if s.watch_seats == 1000 else ""
    return [
        f"Run of {when:%Y-%m-%d %H:%M} UTC ({minutes:.0f} min) on this project's machine: "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, PostgreSQL {pg}, Redis {rd}; "
        f"load average (1/5/15 min) before {_avg(run.loadavg_before)}, after "
        f"{_avg(run.loadavg_after)}.",
        "",
        f"**{verdict_line(run)}**",
        "",
        f"Setup: `manage.py serve --no-seed --workers {s.workers}` on a fresh PostgreSQL database "
        f"and a Redis database of its own, all traffic through its one HTTP port (worker pids "
        f"{', '.join(map(str, run.workers)) or '-'}); {run.created:,} runtimes of {s.size:,} B "
        f"created first ({run.create_failed} failed); each herd opens at once, every watch from "
        f"one list's resourceVersion, {PER_TOKEN_TEXT}; {s.events} updates of one runtime, one "
        f"every {s.interval * 1000:g} ms; deadline {s.deadline:g} s; NODUS_MAX_WATCHES_INFLIGHT="
        f"{s.watch_seats:,} per worker{default}; {run.nofile}.",
    ]


PER_TOKEN_TEXT = "100 watchers per token (the server's per-client watch limit)"


NUDGE_FAILED = "revision nudge receive failed"
NUDGE_WHY = (
    "each is a Redis TimeoutError in channels-redis's receive: redis-py 8 reads with a 5 s "
    "socket_timeout by default and channels-redis 4.3 blocks 5 s in BZPOPMIN, so after 5 s "
    "without a nudge a worker's receive fails, drops its connection and sleeps 1 s; a write "
    "meanwhile reaches the other workers' watches on their hub's 1 s poll of the event log"
)


def _phase_at(run: Run, at: float) -> str:
    for name, ph in run.phases.items():
        if ph.began <= at <= ph.ended:
            return f"during '{name}'"
    return "between phases"


def server_log(run: Run) -> str:
    """What the workers logged at WARNING and above, counted, and in which phases."""
    if not run.logged:
        return "The server logged no warning or error."
    by: dict[str, list[float]] = {}
    for at, what in run.logged:
        by.setdefault(what, []).append(at)
    said = []
    for what, times in by.items():
        where: dict[str, int] = {}
        for at in times:
            place = _phase_at(run, at)
            where[place] = where.get(place, 0) + 1
        places = ", ".join(f"{n} {place}" for place, n in where.items())
        why = f"; {NUDGE_WHY}" if NUDGE_FAILED in what else ""
        said.append(f"{len(times)} x `{what}` ({places}){why}")
    return "The server logged: " + "; ".join(said)


def notes(run: Run) -> list[str]:
    out = [f"Load generator: {bottleneck(run)}.", server_log(run) + "."]
    seats, workers = run.settings.watch_seats, run.settings.workers
    if seats != 1000:
        out.append(
            "The server's default NODUS_MAX_WATCHES_INFLIGHT is 1,000 open watches per worker "
            f"process: {workers} workers at their defaults hold at most {1000 * workers:,} "
            f"watches; this run set it to {seats:,} (at most {seats * workers:,} in all; "
            "BENCH_SCALEOUT_WATCHES_PER_WORKER=1000 runs at the default)."
        )
    out.append(
        "Both herds are served by the same server, the baseline first; the ratio is the big "
        "herd's figure over the baseline's. The RSS peaks after the baseline are the workers' "
        "peak so far; after the big herd, the peak of the run."
    )
    if run.error:
        out.append(f"The run stopped early: {run.error}")
    return [f"- {note}" for note in out]


def body(run: Run) -> list[str]:
    return [*header(run), "", *table(run), "", "Notes:", "", *notes(run)]


def summary(run: Run) -> str:
    return "\n".join(["", "herd-scaleout", "=============", "", *body(run), ""])


def block(run: Run) -> str:
    return "\n".join(body(run))


def comparisons(run: Run) -> list[Comparison]:
    s = run.settings
    met, _why = verdict(run)
    delivery = Comparison(
        timings(f"delivery to {s.watchers:,} watchers, {s.workers} workers", latencies(run.big)),
        timings(f"delivery to {s.base:,} watchers, same server", latencies(run.base)),
        f"{verdict_line(run)}; {bottleneck(run)}",
    )
    opened = Comparison(
        timings(f"start to watching, {s.watchers:,} at once", watching(run.big)),
        timings(f"start to watching, {s.base:,} at once", watching(run.base)),
        f"never watching: {run.big.herd.dropped if run.big and run.big.herd else '-'} of "
        f"{s.watchers:,}; {'MET' if met else 'MISSED'}",
    )
    return [delivery, opened]


@case("herd-scaleout", explicit=True)
def herd_scaleout(_bench: Bench) -> Iterable[Comparison]:
    s = scaleout.settings()
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"nodus-herd-scaleout-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        run = scaleout.measure(s, work)
    finally:
        for leftover in work.iterdir():
            leftover.unlink()
        work.rmdir()
    print(summary(run))
    scaleout.log(f"figures written to {write_results('herd-scaleout', block(run))}")
    when = datetime.fromtimestamp(run.began, UTC)
    scaleout.log(f"run of {when:%Y-%m-%d %H:%M} UTC took {(time.time() - run.began) / 60:.1f} min")
    return comparisons(run)
