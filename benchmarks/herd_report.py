"""The herd case's figures: Comparisons for the harness, and the report block a run prints and
keeps as its results file (`harness.write_results`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks.harness import Comparison, Timings
from benchmarks.herd_http import Counters
from benchmarks.herd_loads import Creates, Delivery, Herd, Settings
from benchmarks.herd_side import Side

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


@dataclass
class Row:
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


def health(side: Side | None, *phases: str) -> str:
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


def _delivered(d: Delivery | None) -> str:
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


def rows(nodus: Side, etcd: Side | None, s: Settings) -> list[Row]:
    def both(what: Callable[[Side], str]) -> str:
        return _both(nodus, etcd, what)

    def beside(*phases: str) -> str:
        return both(lambda x: health(x, *phases) + resets(x, *phases))

    out = [
        Row(
            "1",
            f"{s.objects:,} creates of {s.size:,} B, {s.inflight} in flight (total)",
            "s",
            _total(nodus.creates),
            _of(etcd, lambda x: _total(x.creates)),
            [both(lambda x: _creates(x.creates)), beside("creates")],
        ),
        Row(
            "2",
            f"full list of {nodus.listed:,}, parsed (median of {s.lists})",
            "ms",
            nodus.lists,
            _of(etcd, lambda x: x.lists),
            [both(lambda x: f"{x.listed:,} items"), beside("list")],
        ),
        Row(
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
        Row(
            "4",
            f"delivery: {s.events} updates to {s.clients} watchers",
            "ms",
            _lat(nodus.delivery),
            _of(etcd, lambda x: _lat(x.delivery)),
            [both(lambda x: _delivered(x.delivery)), beside("delivery")],
        ),
        Row(
            "5",
            f"delivery: {s.events} updates to {s.watchers:,} watchers",
            "ms",
            _lat(nodus.delivery_big),
            _of(etcd, lambda x: _lat(x.delivery_big)),
            [
                both(lambda x: _delivered(x.delivery_big)),
                "opening them (a herd too): " + both(lambda x: _herd(x.herd_big)),
                "accept queue overflows: "
                + both(lambda x: str(x.overflows.get("herd of many", 0))),
                "start to watching p50 / p99: " + both(lambda x: _pair(_watching(x.herd_big))),
                "etcd's watch the probe's key (what the label selector picks)",
                beside("herd of many", "delivery to many"),
            ],
        ),
        Row(
            "6",
            f"delivery: creates at {s.rate:g}/s for {s.rate_seconds:g} s to {s.clients} watchers",
            "ms",
            _lat(nodus.paced),
            _of(etcd, lambda x: _lat(x.paced)),
            [
                both(lambda x: _delivered(x.paced)),
                "creates p50 / p99: "
                + both(lambda x: _pair(x.paced.writes.latencies if x.paced else [])),
                beside("paced creates"),
            ],
        ),
    ]
    if s.big:
        out.append(
            Row(
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
            Row(
                "7",
                f"server RSS, peak (VmHWM), at {nodus.big_listed:,} objects with load 5's "
                "watchers open",
                "MB",
                [nodus.rss["big"][0]] if "big" in nodus.rss else [],
                _of(etcd, lambda x: [x.rss["big"][0]] if "big" in x.rss else []),
                [both(lambda x: _memory(x, "big"))],
                docs_only=True,
            )
        )
    for row in out:
        row.health = health_cell(nodus, etcd, *PHASES[row.load])
        if not row.docs_only:
            phases = PHASES[row.load]
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


PHASES = {
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


def _memory(side: Side, phase: str) -> str:
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


def block(all_rows: list[Row], notes: list[str], header: str, s: Settings, skipped: str) -> str:
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
