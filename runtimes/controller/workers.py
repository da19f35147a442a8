"""The loop every controller worker thread runs: the runtime, job and garbage-collector workers.

A worker takes a key from its ``WorkQueue``, looks after its thread's database connection,
hands the key to its handler and marks it done. A handler decides what success means (forget
the key's backoff, or requeue it after a transient failure); an exception is logged and the
key comes back after its next backoff step. Every worker is CPU-paced (``CpuPacer``): after
each key it rests in proportion to the CPU the key used on its thread, so a backlog of any
kind never takes more than its share of the interpreter from the requests beside it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable

from runtimes.controller.pacing import CpuPacer
from runtimes.controller.workqueue import WorkQueue

log = logging.getLogger("nodus.controller")


def run_worker[K: Hashable](
    queue: WorkQueue[K],
    handle: Callable[[K], None],
    *,
    share: float,
    stopping: threading.Event,
    keep: Callable[..., None],
    describe: Callable[[K], str],
    idle: threading.Event | None = None,
    logger: logging.Logger = log,
) -> None:
    """Works ``queue`` until it shuts down. ``keep(failed=...)`` refreshes the thread's
    database connection (``ConnectionKeeper.refresh``); ``idle`` is set whenever the queue has
    drained; ``describe(key)`` names a key in the log."""
    pacer = CpuPacer(share)
    failed = False
    while True:
        key = queue.get(timeout=0.5)
        if key is None:
            if queue.shutting_down:
                return
            if idle is not None and not len(queue):
                idle.set()
            continue
        if idle is not None:
            idle.clear()
        started = pacer.start()
        try:
            keep(failed=failed)
            failed = False
            handle(key)
        except Exception:
            failed = True
            delay = queue.add_rate_limited(key)
            logger.exception("%s failed; retrying in %.1fs", describe(key), delay)
        finally:
            queue.done(key)
            pacer.worked(started)
        pacer.rest(stopping)
