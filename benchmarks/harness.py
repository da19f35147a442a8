"""The benchmark harness: cases register here, run in order, and print p50/p99 beside a baseline.

A case is a function taking the `Bench` context and returning one or more `Comparison`s: the
timings of the thing measured and of a baseline measured in the same run (same machine, same
moment), so the ratio means something even where absolute times drift between machines.
Add a case anywhere under benchmarks/ with `@case("name")` and import its module in run.py.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def write_results(case: str, text: str) -> Path:
    """Keeps a case's full report as a results file, `$BENCH_RESULTS` (default .cache/bench, out
    of git) / <case>-<UTC time>.md, and returns its path. docs/benchmarks.md is not touched: it
    keeps the current figures and how to reproduce them, updated by hand from such a file."""
    folder = Path(os.environ.get("BENCH_RESULTS") or ROOT / ".cache" / "bench")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case}-{datetime.now(UTC):%Y%m%dT%H%M%S}.md"
    path.write_text(text.rstrip("\n") + "\n")
    return path


@dataclass
class Timings:
    label: str
    seconds: list[float]

    def percentile(self, q: int) -> float:
        if len(self.seconds) == 1:
            return self.seconds[0]
        # "inclusive" keeps p99 of 100 samples inside the observed range.
        return statistics.quantiles(self.seconds, n=100, method="inclusive")[q - 1]

    @property
    def p50(self) -> float:
        return self.percentile(50)

    @property
    def p99(self) -> float:
        return self.percentile(99)


@dataclass
class Comparison:
    measured: Timings
    baseline: Timings
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.measured.p50 / self.baseline.p50 if self.baseline.p50 else float("inf")


@dataclass
class Bench:
    """What cases share: the live server, an authenticated client, scratch state."""

    repeat: int = 100
    context: dict[str, Any] = field(default_factory=dict)


class CaseSkipped(Exception):
    """Raised by a case whose subject is not there yet (say, a console page still to come)."""


CaseFn = Callable[[Bench], Iterable[Comparison]]
CASES: dict[str, CaseFn] = {}
# Cases that run only when named (say, minutes long or needing PostgreSQL and Redis).
EXPLICIT: set[str] = set()


def case(name: str, explicit: bool = False) -> Callable[[CaseFn], CaseFn]:
    def register(fn: CaseFn) -> CaseFn:
        CASES[name] = fn
        if explicit:
            EXPLICIT.add(name)
        return fn

    return register


def timed(label: str, calls: Iterable[Callable[[], object]]) -> Timings:
    """Times each call on its own (perf_counter), sequentially."""
    seconds = []
    for call in calls:
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return Timings(label, seconds)


def repeat(label: str, n: int, call: Callable[[int], object]) -> Timings:
    """Times call(0) ... call(n - 1), each on its own."""
    return timed(label, (functools.partial(call, i) for i in range(n)))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:9.3f}"


def report(results: list[tuple[str, Comparison]]) -> str:
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
            f"{_ms(c.measured.p50)} {_ms(c.measured.p99)}   {c.baseline.label:<{base}} "
            f"{_ms(c.baseline.p50)} {_ms(c.baseline.p99)} {c.ratio:>6.1f}x"
        )
        if c.note:
            lines.append(f"    {c.note}")
    return "\n".join(lines)
