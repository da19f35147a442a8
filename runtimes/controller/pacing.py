"""Keeps the controller's workers to a share of one core, so the API beside them stays quick."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# The embedded controller runs in threads of the web server's process. Python threads take turns
# on one interpreter lock: a worker busy for seconds on end (2,000 runtimes whose registry is
# down, each read, inspected and written) takes the lock from the request threads for as long,
# and every request waits its turn several times (once per database call). A worker therefore
# measures the CPU time each reconcile used on its own thread (``time.thread_time``: waiting for
# a registry, the database or the lock costs nothing) and rests for as long again times
# ``1/share - 1`` before the next: at ``share`` 0.125 it works at most one eighth of the time.
# Waiting on a slow registry is not work, so paced workers are as quick as unpaced ones when the
# trouble is a timeout rather than CPU.

# One reconcile that used a lot of CPU (a huge manifest) must not idle a worker for minutes.
MAX_REST_SECONDS = 5.0


class CpuPacer:
    """One worker's pacing: ``with pacer.unit(): reconcile()``, then ``pacer.rest(stop)``."""

    def __init__(
        self,
        share: float,
        *,
        cpu_clock: Callable[[], float] = time.thread_time,
        max_rest: float = MAX_REST_SECONDS,
    ) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"a CPU share is in (0, 1], not {share}")
        self.share = share
        self.cpu_clock = cpu_clock
        self.max_rest = max_rest
        self._owed = 0.0

    def start(self) -> float:
        return self.cpu_clock()

    def worked(self, started: float) -> float:
        """Records a unit of work begun at ``started``; returns the rest it calls for."""
        used = max(0.0, self.cpu_clock() - started)
        self._owed = min(self.max_rest, self._owed + used * (1.0 / self.share - 1.0))
        return self._owed

    def rest(self, stop: threading.Event) -> None:
        """Rests what the work so far calls for; returns at once when ``stop`` is set."""
        owed, self._owed = self._owed, 0.0
        if owed > 0:
            stop.wait(owed)
