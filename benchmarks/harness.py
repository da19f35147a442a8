"""The benchmark harness: cases register here, run in order, and are timed beside a baseline.

A case is a function taking the `Bench` context and returning one or more `Comparison`s: the
timings of the thing measured and of a baseline measured in the same run (same machine, same
moment), so the ratio means something even where absolute times drift between machines.
Add a case anywhere under benchmarks/ with `@case("name")` and import its module in run.py.
run.py prints their p50/p99 with `report.report` (benchmarks/report.py).
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


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
