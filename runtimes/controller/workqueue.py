"""A work queue as client-go's: per-key dedupe, delayed adds and exponential backoff.

A key is in the queue at most once; a key added while a worker holds it is queued again when
that worker calls ``done``, so no change is lost and no key is worked on twice at once. Keys
that keep failing transiently come back after ``base · 2^n`` seconds, capped at ``maximum``,
shortened by a random fraction of up to ``jitter`` (0.25: a delay lands in [0.75·d, d]). The
jitter matters when many keys fail together (2,000 runtimes whose registry is down): without
it they would all come back in the same instant, every time, up to the cap and beyond.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections.abc import Callable, Hashable


class WorkQueue[K: Hashable]:
    def __init__(
        self,
        *,
        backoff_base: float = 1.0,
        backoff_max: float = 300.0,
        jitter: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if not 0.0 <= jitter < 1.0:
            raise ValueError(f"jitter must be in [0, 1), not {jitter}")
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.jitter = jitter
        self.clock = clock
        self.rand = rand
        self._ready: list[K] = []  # FIFO of keys due now
        self._queued: set[K] = set()  # in _ready
        self._processing: set[K] = set()
        self._dirty: set[K] = set()  # added while processing: requeue on done()
        self._delayed: list[tuple[float, int, K]] = []  # heap of (due, tiebreak, key)
        self._due: dict[K, float] = {}  # the one live delayed entry per key: the earliest
        self._failures: dict[K, int] = {}
        self._counter = itertools.count()
        self._shut = False
        self._cond = threading.Condition()

    def add(self, key: K) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: K) -> None:
        if self._shut:
            return
        if key in self._processing:
            self._dirty.add(key)
            return
        if key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shut:
                return
            due = self.clock() + delay
            if key in self._due and self._due[key] <= due:
                return  # already coming back sooner
            self._due[key] = due
            heapq.heappush(self._delayed, (due, next(self._counter), key))
            self._cond.notify()

    def add_rate_limited(self, key: K, at_least: float | None = None) -> float:
        """Requeues ``key`` after its next backoff step; returns the delay chosen.

        ``at_least`` (a registry's Retry-After) lengthens the delay, never past the cap.
        """
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        # 2**failures overflows a float after about a thousand failures: cap the exponent.
        delay = min(self.backoff_base * (2 ** min(failures, 64)), self.backoff_max)
        delay *= 1.0 - self.jitter * self.rand()
        if at_least is not None:
            delay = max(delay, min(at_least, self.backoff_max))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Clears ``key``'s backoff: it succeeded (or is gone)."""
        with self._cond:
            self._failures.pop(key, None)

    def pending(self, key: K) -> bool:
        """Whether ``key`` is held by a worker or coming back after a delay: either way it will
        be looked at again without another ``add``."""
        with self._cond:
            return key in self._processing or key in self._due

    def failures(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def get(self, timeout: float | None = None) -> K | None:
        """The next due key (now held until ``done``), or None on timeout or shutdown."""
        deadline = None if timeout is None else self.clock() + timeout
        with self._cond:
            while True:
                if self._shut:
                    return None
                self._promote_due()
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                now = self.clock()
                waits = [self._delayed[0][0] - now] if self._delayed else []
                if deadline is not None:
                    if now >= deadline:
                        return None
                    waits.append(deadline - now)
                self._cond.wait(max(0.0, min(waits)) if waits else None)

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add_locked(key)

    def _promote_due(self) -> None:
        now = self.clock()
        while self._delayed and self._delayed[0][0] <= now:
            due, _n, key = heapq.heappop(self._delayed)
            if self._due.get(key) != due:
                continue  # superseded by an earlier entry for the same key
            del self._due[key]
            self._add_locked(key)

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready) + len(self._due)

    def quiet(self) -> bool:
        """Nothing due, delayed or held by a worker (read under one lock)."""
        with self._cond:
            return not (self._ready or self._due or self._processing)

    def shut_down(self) -> None:
        with self._cond:
            self._shut = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        return self._shut
