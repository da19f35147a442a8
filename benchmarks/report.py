"""Every table the benchmarks print and every results file they keep, from what the cases measured.

The cases measure, each in its own module, and hand their figures here; this module only
formats them: run.py's table of each case's p50/p99 beside its baseline (`report`), a case's
results file (`write_results`), the abuse table (`abuse_table`), the herd's table beside etcd
(`herd_rows`, `herd_block`), and herd-scaleout's verdict, table and summary
(`scaleout_summary`, `scaleout_block`, `scaleout_comparisons`). It imports the harness and the
modules that define what was measured (`abuse_probe`, `herd_http`, `herd_loads`, `herd_side`,
`herd_scaleout`) for their types, and none of those imports it. Nothing here asserts on time.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.abuse_probe import Outcome
from benchmarks.harness import Comparison, Timings
from benchmarks.herd_http import Counters
from benchmarks.herd_loads import Creates, Delivery, Herd, Settings
from benchmarks.herd_scaleout import HerdRun, Phase, Run
from benchmarks.herd_side import Side

ROOT = Path(__file__).resolve().parent.parent


# -- shared figures ---------------------------------------------------------------------------
# Percentiles and milliseconds as every table shows them, and what a server made a client do.

NAN = float("nan")


def timings(label: str, seconds: list[float]) -> Timings:
    return Timings(label, seconds or [NAN])


def ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:,.1f}"


def p(values: list[float], q: int) -> float:
    return timings("", values).percentile(q) if values else NAN


def ratio(a: float, b: float) -> str:
    return "-" if math.isnan(a) or math.isnan(b) or not b else f"{a / b:.1f}x"


def counted(counters: Counters) -> str:
    parts = [f"{counters.retries} 429 retries"]
    if counters.errors:
        parts.append(f"{counters.errors} broken connections retried")
    if counters.statuses:
        parts.append(
            "other answers " + ", ".join(f"{k}: {v}" for k, v in counters.statuses.items())
        )
    return ", ".join(parts)


# -- run.py's table and the results files -----------------------------------------------------


def _ms_column(seconds: float) -> str:
    return f"{seconds * 1000:9.3f}"


def report(results: list[tuple[str, Comparison]]) -> str:
    """run.py's table: per Comparison, its case and label, n, p50 and p99 in ms, the baseline's
    label, p50 and p99, and the ratio of the p50s (measured / baseline), with its note below."""
    width = max([34] + [len(f"{name}: {c.measured.label}") for name, c in results])
    base = max([34] + [len(c.baseline.label) for _name, c in results])
    header = (
        f"{'case':<{width}} {'n':>5} {'p50 ms':>9} {'p99 ms':>9}   "
        f"{'baseline':<{base}} {'p50 ms':>9} {'p99 ms':>9} {'ratio':>7}"
    )
    lines = [header, "-" * len(header)]
    for name, c in results:
        lines.append(
            f"{name + ': ' + c.measured.label:<{width}} {len(c.measured.seconds):>5} "
            f"{_ms_column(c.measured.p50)} {_ms_column(c.measured.p99)}   "
            f"{c.baseline.label:<{base}} "
            f"{_ms_column(c.baseline.p50)} {_ms_column(c.baseline.p99)} {c.ratio:>6.1f}x"
        )
        if c.note:
            lines.append(f"    {c.note}")
    return "\n".join(lines)


def write_results(case: str, text: str) -> Path:
    """Keeps a case's full report as a results file, `$BENCH_RESULTS` (default .cache/bench, out
    of git) / <case>-<UTC time>.md, and returns its path. docs/benchmarks.md is not touched: it
    keeps the current figures and how to reproduce them, updated by hand from such a file."""
    folder = Path(os.environ.get("BENCH_RESULTS") or ROOT / ".cache" / "bench")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case}-{datetime.now(UTC):%Y%m%dT%H%M%S}.md"
    path.write_text(text.rstrip("\n") + "\n")
    return path


# -- abuse ------------------------------------------------------------------------------------
# The abuse benchmark's table: each attack beside its benign baseline, with the target.
# Nothing here judges: a target is printed beside the figure it is about, never asserted.


@dataclass
class AbuseRow:
    name: str  # the attack, as docs/security.md's threat table names it
    who: str  # who can mount it
    attack: Outcome
    baseline: Outcome | None = None
    target: str = ""  # the target, printed beside the figure
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> str:
        if self.baseline is None or self.attack.seconds is None:
            return ""
        if not self.baseline.seconds:
            return ""
        at_least = "≥ " if self.attack.at_least else ""
        return f"{at_least}{self.attack.seconds / self.baseline.seconds:.1f}x"


def _abuse_seconds(outcome: Outcome) -> str:
    if outcome.seconds is None:
        return "—"
    at_least = "≥ " if outcome.at_least else ""
    if outcome.seconds >= 10:
        return f"{at_least}{outcome.seconds:.1f} s"
    return f"{at_least}{outcome.seconds * 1000:.1f} ms"


def _abuse_memory(outcome: Outcome) -> str:
    text = f"+{outcome.rss_added_mb:.1f} MB"
    return f"{text} (killed)" if outcome.killed else text


def _abuse_livez(outcome: Outcome) -> str:
    if outcome.livez_worst_seconds is None and not outcome.livez_missed:
        return "—"
    worst = (
        ""
        if outcome.livez_worst_seconds is None
        else f"{outcome.livez_worst_seconds * 1000:.0f} ms"
    )
    missed = f", {outcome.livez_missed} missed" if outcome.livez_missed else ""
    return (worst + missed).lstrip(", ")


ABUSE_COLUMNS = ("attack", "answer", "time", "peak RSS", "livez worst", "ratio")
ABUSE_WIDEST = (62, 44, 10, 18, 20, 10)


def _abuse_cells(label: str, outcome: Outcome, ratio: str) -> tuple[str, ...]:
    return (
        label,
        outcome.answer,
        _abuse_seconds(outcome),
        _abuse_memory(outcome),
        _abuse_livez(outcome),
        ratio,
    )


def abuse_table(rows: list[AbuseRow]) -> str:
    """Per attack: its line, its baseline's line below, then target, who, and notes."""
    lines: list[tuple[str, ...]] = []
    for row in rows:
        lines.append(_abuse_cells(row.name, row.attack, row.ratio))
        if row.baseline is not None:
            lines.append(_abuse_cells(f"  baseline: {row.baseline.label}", row.baseline, ""))
    widths = [
        min(max(len(line[i]) for line in [ABUSE_COLUMNS, *lines]), ABUSE_WIDEST[i])
        for i in range(len(ABUSE_COLUMNS))
    ]

    def format_line(cells: tuple[str, ...]) -> str:
        return "  ".join(c[:w].ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [format_line(ABUSE_COLUMNS), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    at = 0
    for row in rows:
        count = 2 if row.baseline is not None else 1
        out += [format_line(line) for line in lines[at : at + count]]
        at += count
        out.append(
            f"    target: {row.target}; who: {row.who}"
            + (f"; HWM {row.attack.hwm_after_mb:.0f} MB after" if row.attack.hwm_after_mb else "")
        )
        out += [f"    {note}" for note in [*row.notes, *row.attack.extra.values()]]
        if row.attack.killed:
            out.append(f"    the probe killed the server: {row.attack.killed}; started it again")
    return "\n".join(out)


# -- herd -------------------------------------------------------------------------------------
# The herd case's figures: Comparisons for the harness, and the report block a run prints and
# keeps as its results file (`write_results`).


@dataclass
class HerdRow:
    load: str
    title: str
    unit: str  # "ms"; "s" for a total, "MB" for memory (one value each)
    nodus: list[float]
    etcd: list[float] | None
    notes: list[str] = field(default_factory=list)
    health: str = ""  # the table's cell: /livez p99 (etcd: /health p99) during the load
    docs_only: bool = False  # not a time: in the docs table, not among the harness's lines

    def comparison(self, skipped: str) -> Comparison:
        baseline = (
            timings(f"etcd: {self.title}", self.etcd)
            if self.etcd is not None
            else timings(f"etcd: skipped ({skipped[:40]})", [])
        )
        measured = timings(f"{self.load} {self.title}", self.nodus)
        return Comparison(measured, baseline, "; ".join(self.notes))

    def cells(self) -> list[str]:
        def show(values: list[float] | None) -> str:
            if not values:
                return "-"
            if self.unit == "s":
                return f"{values[0]:,.1f} s"
            if self.unit == "MB":
                return f"{values[0]:,.0f} MB"
            return f"{ms(p(values, 50))} / {ms(p(values, 99))}"

        n50, n99 = p(self.nodus, 50), p(self.nodus, 99)
        e50, e99 = (p(self.etcd, 50), p(self.etcd, 99)) if self.etcd else (NAN, NAN)
        if self.unit != "ms":
            n99 = e99 = NAN
        shown = [self.load, self.title, show(self.nodus), show(self.etcd)]
        return [*shown, ratio(n50, e50), ratio(n99, e99), self.health or "-"]


def health_cell(nodus: Side, etcd: Side | None, *phases: str) -> str:
    def p99(side: Side) -> str:
        seconds = [s for phase in phases for s, _status in side.health_in(phase)]
        return ms(p(seconds, 99)) if seconds else "-"

    return p99(nodus) + (f" / {p99(etcd)}" if etcd is not None else "")


def health_note(side: Side | None, *phases: str) -> str:
    if side is None:
        return ""
    samples = [sample for phase in phases for sample in side.health_in(phase)]
    if not samples:
        return "no health polls"
    seconds = [s for s, _status in samples]
    bad = sum(status != "200" for _s, status in samples)
    what = "/livez" if side.name == "nodus" else "/health"
    failed = f", {bad} failed" if bad else ""
    return (
        f"{what} p99 {ms(p(seconds, 99))} ms, max {ms(max(seconds))} ({len(samples)} polls{failed})"
    )


def _both(nodus: Side, etcd: Side | None, what: Callable[[Side], str], name: str = "etcd") -> str:
    text = f"nodus {what(nodus)}"
    return f"{text}; {name} {what(etcd)}" if etcd is not None else text


def _creates(c: Creates | None) -> str:
    if c is None:
        return "-"
    rate = len(c.latencies) / c.total if c.total else NAN
    return (
        f"each p50 {ms(p(c.latencies, 50))} / p99 {ms(p(c.latencies, 99))} ms, {rate:,.0f}/s, "
        f"{c.failed} failed, {counted(c.counters)}"
    )


def resets(side: Side, *phases: str) -> str:
    """The streams the server cut for not reading, and the resets the kernel counted by cause,
    during `phases` (nothing when there were none)."""
    cuts = sum(side.cuts.get(phase, 0) for phase in phases)
    aborts: dict[str, int] = {}
    for phase in phases:
        for why, n in side.aborts.get(phase, {}).items():
            aborts[why] = aborts.get(why, 0) + n
    text = f", {cuts} watchers cut for not reading" if cuts else ""
    if aborts:
        text += ", kernel resets (all sockets): " + ", ".join(
            f"{why} {n}" for why, n in sorted(aborts.items())
        )
    return text


def _herd(h: Herd | None) -> str:
    if h is None:
        return "-"
    text = f"{len(h.watching)} watching, {h.dropped} dropped"
    if h.dropped:
        text += " (" + ", ".join(f"{why}: {n}" for why, n in h.failures().items()) + ")"
    return f"{text}, {counted(h.counters)}"


def _herd_delivered(d: Delivery | None) -> str:
    if d is None:
        return "-"
    text = f"{d.delivered:,}/{d.expected:,} delivered to {d.watchers} watchers"
    if d.writes.failed:
        text += f", {d.writes.failed} writes failed"
    if d.streamed:
        text += (
            f", stream bytes per watcher p50 {p(d.streamed, 50):,.0f} / max {max(d.streamed):,.0f}"
        )
    if d.endings:
        text += " (streams ended: " + ", ".join(f"{k}: {v}" for k, v in d.endings.items()) + ")"
    return text


def _lat(d: Delivery | None) -> list[float]:
    return d.latencies if d else []


def _of(side: Side | None, figure: Callable[[Side], list[float]]) -> list[float] | None:
    return figure(side) if side is not None else None


def _total(c: Creates | None) -> list[float]:
    return [c.total] if c is not None else []


def herd_rows(nodus: Side, etcd: Side | None, s: Settings) -> list[HerdRow]:
    def both(what: Callable[[Side], str]) -> str:
        return _both(nodus, etcd, what)

    def beside(*phases: str) -> str:
        return both(lambda x: health_note(x, *phases) + resets(x, *phases))

    out = [
        HerdRow(
            "1",
            f"{s.objects:,} creates of {s.size:,} B, {s.inflight} in flight (total)",
            "s",
            _total(nodus.creates),
            _of(etcd, lambda x: _total(x.creates)),
            [both(lambda x: _creates(x.creates)), beside("creates")],
        ),
        HerdRow(
            "2",
            f"full list of {nodus.listed:,}, parsed (median of {s.lists})",
            "ms",
            nodus.lists,
            _of(etcd, lambda x: x.lists),
            [both(lambda x: f"{x.listed:,} items"), beside("list")],
        ),
        HerdRow(
            "3",
            f"herd of {s.clients}: start to watching",
            "ms",
            _watching(nodus.herd),
            _of(etcd, lambda x: _watching(x.herd)),
            [
                both(lambda x: _herd(x.herd)),
                "accept queue overflows (SYNs the kernel dropped): "
                + both(lambda x: str(x.overflows.get("herd", 0))),
                beside("herd"),
            ],
        ),
        HerdRow(
            "4",
            f"delivery: {s.events} updates to {s.clients} watchers",
            "ms",
            _lat(nodus.delivery),
            _of(etcd, lambda x: _lat(x.delivery)),
            [both(lambda x: _herd_delivered(x.delivery)), beside("delivery")],
        ),
        HerdRow(
            "5",
            f"delivery: {s.events} updates to {s.watchers:,} watchers",
            "ms",
            _lat(nodus.delivery_big),
            _of(etcd, lambda x: _lat(x.delivery_big)),
            [
                both(lambda x: _herd_delivered(x.delivery_big)),
                "opening them (a herd too): " + both(lambda x: _herd(x.herd_big)),
                "accept queue overflows: "
                + both(lambda x: str(x.overflows.get("herd of many", 0))),
                "start to watching p50 / p99: " + both(lambda x: _pair(_watching(x.herd_big))),
                "etcd's watch the probe's key (what the label selector picks)",
                beside("herd of many", "delivery to many"),
            ],
        ),
        HerdRow(
            "6",
            f"delivery: creates at {s.rate:g}/s for {s.rate_seconds:g} s to {s.clients} watchers",
            "ms",
            _lat(nodus.paced),
            _of(etcd, lambda x: _lat(x.paced)),
            [
                both(lambda x: _herd_delivered(x.paced)),
                "creates p50 / p99: "
                + both(lambda x: _pair(x.paced.writes.latencies if x.paced else [])),
                beside("paced creates"),
            ],
        ),
    ]
    if s.big:
        out.append(
            HerdRow(
                "7",
                f"full list of {nodus.big_listed:,}, parsed, with load 5's watchers open",
                "ms",
                nodus.big_lists,
                _of(etcd, lambda x: x.big_lists),
                [
                    "watchers open: " + both(lambda x: f"{x.big_open:,} of {s.watchers:,}"),
                    "adding the objects: " + both(lambda x: _creates(x.big_creates)),
                    beside("big"),
                ],
            )
        )
        out.append(
            HerdRow(
                "7",
                f"server RSS, peak (VmHWM), at {nodus.big_listed:,} objects with load 5's "
                "watchers open",
                "MB",
                [nodus.rss["big"][0]] if "big" in nodus.rss else [],
                _of(etcd, lambda x: [x.rss["big"][0]] if "big" in x.rss else []),
                [both(lambda x: _herd_memory(x, "big"))],
                docs_only=True,
            )
        )
    for row in out:
        row.health = health_cell(nodus, etcd, *HERD_PHASES[row.load])
        if not row.docs_only:
            phases = HERD_PHASES[row.load]
            row.notes.append(
                "cores busy, server + load generator: "
                + both(functools.partial(_cpu, phases=phases))
            )
    return out


def _cpu(side: Side, phases: tuple[str, ...]) -> str:
    shown = []
    for phase in phases:
        server, client = side.cpu.get(phase, (NAN, NAN))
        shown.append((f"{phase} " if len(phases) > 1 else "") + f"{server:.2f} + {client:.2f}")
    return ", ".join(shown)


HERD_PHASES = {
    "1": ("creates",),
    "2": ("list",),
    "3": ("herd",),
    "4": ("delivery",),
    "5": ("herd of many", "delivery to many"),
    "6": ("paced creates",),
    "7": ("big",),
}


def _watching(h: Herd | None) -> list[float]:
    return h.watching if h is not None else []


def _pair(values: list[float]) -> str:
    return f"{ms(p(values, 50))} / {ms(p(values, 99))} ms" if values else "-"


def _herd_memory(side: Side, phase: str) -> str:
    hwm, rss = side.rss.get(phase, (NAN, NAN))
    return f"RSS peak (VmHWM) {hwm:,.0f} MB, now {rss:,.0f} MB"


def machine_note(nodus: Side, etcd: Side | None, cpus: int, python: str) -> str:
    def avg(side: Side | None, when: str) -> str:
        if side is None or when not in side.loadavg:
            return "-"
        return "/".join(f"{v:.2f}" for v in side.loadavg[when])

    text = (
        f"{cpus} CPUs, Python {python}; load average (1/5/15 min) before nodus "
        f"{avg(nodus, 'before')}, after {avg(nodus, 'after')}"
    )
    if etcd is not None:
        text += f"; before etcd {avg(etcd, 'before')}, after {avg(etcd, 'after')}"
    return text


def memory_note(nodus: Side, etcd: Side | None) -> str:
    def each(side: Side) -> str:
        return ", ".join(f"{phase} {rss:,.0f}" for phase, (_hwm, rss) in side.rss.items())

    text = f"nodus RSS MB after each load: {each(nodus)}; peak {nodus.rss['end'][0]:,.0f}"
    if etcd is not None:
        text += f"; etcd: {each(etcd)}; peak {etcd.rss['end'][0]:,.0f}"
    return text


def herd_block(
    all_rows: list[HerdRow], notes: list[str], header: str, s: Settings, skipped: str
) -> str:
    lines = [header, ""]
    lines.append(
        f"Counts: {s.objects:,} objects of {s.size:,} B created {s.inflight} at a time; "
        f"herd of {s.clients} clients (own token each, over {s.processes} client "
        f"process{'es' if s.processes > 1 else ''}); {s.events} updates every "
        f"{s.interval * 1000:g} ms; {s.watchers:,} watchers; creates at {s.rate:g}/s for "
        f"{s.rate_seconds:g} s"
        + (f"; up to {s.big_objects:,} objects." if s.big else "; the 10,000-object phase skipped.")
    )
    if skipped:
        lines += ["", f"etcd side skipped: {skipped}"]
    lines += [
        "",
        "p50 / p99 in ms unless marked; ratio = nodus / etcd; the last column is the health"
        " poll's p99 in ms during the load, nodus / etcd.",
        "",
        "| load | figure | nodus | etcd | ratio p50 | ratio p99 | /livez p99 (etcd: /health) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in all_rows]
    lines += ["", "Notes:", ""]
    for row in all_rows:
        lines.append(f"- load {row.load}: " + "; ".join(row.notes) + ".")
    lines += [f"- {note}." for note in notes]
    return "\n".join(lines)


# -- herd-scaleout ----------------------------------------------------------------------------
# The herd-scaleout case's figures (`herd_scaleout.measure` runs it; `herd` registers it): the
# verdict on the target, the printed summary, the harness's Comparisons and the results file.

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


def _scaleout_delivered(one: HerdRun | None) -> str:
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


def scaleout_table(run: Run) -> list[str]:
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
        row("events delivered / expected", _scaleout_delivered),
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


def scaleout_header(run: Run) -> list[str]:
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
        return "The server logged no warning or error"
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


def scaleout_notes(run: Run) -> list[str]:
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


def scaleout_body(run: Run) -> list[str]:
    return [*scaleout_header(run), "", *scaleout_table(run), "", "Notes:", "", *scaleout_notes(run)]


def scaleout_summary(run: Run) -> str:
    return "\n".join(["", "herd-scaleout", "=============", "", *scaleout_body(run), ""])


def scaleout_block(run: Run) -> str:
    return "\n".join(scaleout_body(run))


def scaleout_comparisons(run: Run) -> list[Comparison]:
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
